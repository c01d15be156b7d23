import { afterEach, describe, expect, it } from '@jest/globals';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { createTracing, disabledTracing, traceIdOf, type Tracing } from './tracing.js';

const CALLER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing', () => {
  let tracing: Tracing | undefined;
  afterEach(async () => {
    await tracing?.shutdown();
  });

  it('is off by default: no span, nothing allocated per call', () => {
    tracing = createTracing({ enabled: false, serviceName: 'test' });
    expect(tracing).toBe(disabledTracing);
    expect(tracing.startSpan('x', { parent: CALLER })).toBeUndefined();
  });

  it("continues a caller's traceparent and hands the next hop a child of the same trace", () => {
    const exporter = new InMemorySpanExporter();
    tracing = createTracing({ enabled: true, serviceName: 'iop-test', exporter });
    const span = tracing.startSpan('iop.edge.run', { parent: CALLER, attributes: { 'iop.model': 'm' } });
    expect(span?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    const next = span?.traceparent ?? '';
    expect(traceIdOf(next)).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(next).not.toContain('b7ad6b7169203331');
    span?.end('boom');
    span?.end();
    const [finished] = exporter.getFinishedSpans();
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    expect(finished?.name).toBe('iop.edge.run');
    expect(finished?.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(finished?.attributes['iop.model']).toBe('m');
    expect(finished?.status.code).toBe(2);
    expect(finished?.resource.attributes['service.name']).toBe('iop-test');
  });

  it('starts a new trace without a parent or with a malformed one', () => {
    const exporter = new InMemorySpanExporter();
    tracing = createTracing({ enabled: true, serviceName: 'iop-test', exporter });
    const fresh = tracing.startSpan('a', { parent: 'not-a-traceparent' });
    expect(fresh?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh?.traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    fresh?.end();
    expect(exporter.getFinishedSpans()[0]?.parentSpanContext).toBeUndefined();
  });

  it('samples new traces by ratio (0 = none exported) but keeps propagating the trace id', () => {
    const exporter = new InMemorySpanExporter();
    tracing = createTracing({ enabled: true, serviceName: 'iop-test', exporter, sampleRatio: 0 });
    const span = tracing.startSpan('a');
    expect(traceIdOf(span?.traceparent)).toBe(span?.traceId);
    span?.end();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
