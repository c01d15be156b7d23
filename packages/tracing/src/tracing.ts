// W3C trace context and OpenTelemetry spans for the edge and the node, behind a small interface so the rest of
// IOP never touches the OpenTelemetry API. Off by default: `createTracing({ enabled: false })` returns a tracer
// whose `startSpan` returns undefined without allocating, so the hot path pays one branch. On: spans go through a
// bounded batch processor to an OTLP/HTTP exporter (or, in tests, to the exporter given), sampled by ratio for new
// traces and by the caller's flag for continued ones. A caller's `traceparent` is continued; a malformed one
// starts a new trace.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Span,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';

export type SpanAttributes = Record<string, string | number | boolean>;

export interface StartSpanOptions {
  /** The parent's `traceparent` (a caller's header, or the wire field); none or malformed = a new trace. */
  parent?: string | undefined;
  attributes?: SpanAttributes;
  /** `server` for work done on a caller's behalf, `client` for a call to another service; default internal. */
  kind?: 'server' | 'client' | 'internal';
}

export interface TraceSpan {
  readonly traceId: string;
  /** This span as a W3C `traceparent` value, for the next hop. */
  readonly traceparent: string;
  setAttributes(attributes: SpanAttributes): void;
  /** Ends the span (an error message marks it failed). Idempotent. */
  end(error?: string): void;
}

export interface Tracing {
  readonly enabled: boolean;
  /** A started span, or undefined when tracing is off. */
  startSpan(name: string, options?: StartSpanOptions): TraceSpan | undefined;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  enabled: boolean;
  /** `service.name` of the spans (iop-edge, iop-node). */
  serviceName: string;
  /** OTLP/HTTP traces endpoint; default the exporter's own (http://localhost:4318/v1/traces). */
  otlpEndpoint?: string;
  /** Fraction of new traces sampled (0-1); default 1. */
  sampleRatio?: number;
  /** Where spans go instead of OTLP, synchronously (tests: an InMemorySpanExporter). */
  exporter?: SpanExporter;
}

export const disabledTracing: Tracing = {
  enabled: false,
  startSpan: () => undefined,
  shutdown: () => Promise.resolve(),
};

const propagator = new W3CTraceContextPropagator();
const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

export function createTracing(options: TracingOptions): Tracing {
  if (!options.enabled) return disabledTracing;
  const processor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : new BatchSpanProcessor(
        new OTLPTraceExporter(options.otlpEndpoint ? { url: options.otlpEndpoint } : {}),
        // Bounded: a collector that is down costs at most this many buffered spans, then spans are dropped.
        { maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 2000 },
      );
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio ?? 1) }),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('iop');
  return {
    enabled: true,
    startSpan(name, spanOptions = {}) {
      const parent = spanOptions.parent
        ? propagator.extract(ROOT_CONTEXT, { traceparent: spanOptions.parent }, defaultTextMapGetter)
        : ROOT_CONTEXT;
      const span = tracer.startSpan(
        name,
        { kind: KINDS[spanOptions.kind ?? 'internal'], attributes: spanOptions.attributes ?? {} },
        parent,
      );
      return new OtelSpan(span);
    },
    shutdown: () => provider.shutdown(),
  };
}

class OtelSpan implements TraceSpan {
  private ended = false;

  constructor(private readonly span: Span) {}

  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  get traceparent(): string {
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, this.span), carrier, defaultTextMapSetter);
    return carrier['traceparent'] ?? '';
  }

  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }

  end(error?: string): void {
    if (this.ended) return;
    this.ended = true;
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

/** The trace id of a `traceparent` value, or undefined when it is not one. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  const match = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent?.trim() ?? '');
  return match?.[1];
}
