// Public API of @iop/tracing: W3C trace context and OpenTelemetry spans (OTLP export), off by default.
export {
  createTracing,
  disabledTracing,
  traceIdOf,
  type SpanAttributes,
  type StartSpanOptions,
  type TraceSpan,
  type Tracing,
  type TracingOptions,
} from './tracing.js';
export { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
