// Serves one run as an OpenAI answer: starts it through the run starter, then writes it whole as JSON once it
// ended (the node may fetch it whole from the backend) or as SSE as it goes, with the run and timing headers
// (openai-answer.ts). Streams send the edge's share up to the first byte as a header and the full figure as an
// HTTP trailer of the same name; `strict_stream_buffer` buffers the run first and sends no trailer.
import type { RunEventPart } from '@iop/wire';
import type { EdgeConfig } from '@iop/config';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';
import { setDroppedParamsHeader } from '../surface-kit/dropped-params.js';
import type { RequestContext } from '../surface-kit/request-context.js';
import type { ResolvedRoute } from '../surface-kit/route-resolver.js';
import { bufferRun, type CollectedRun, type OutputOptions } from '../surface-kit/run-output.js';
import type { RunStarter } from '../surface-kit/run-starter.js';
import type { RunCaller, SurfaceRun } from '../surface-kit/surface-run.js';
import { SseSink } from '../surface-kit/sse-sink.js';
import type { SurfaceMetrics } from '../surface-kit/surface-metrics.js';
import {
  formatMs,
  OVERHEAD_HEADER,
  overheadOf,
  runHeaders,
  sendJson,
  setRunHeaders,
} from './openai-answer.js';

/** How one endpoint writes a run: whole, or as its SSE events. */
export interface RunWriters {
  /** How reasoning shows in a collected answer; default from the caller and `strict_output`. */
  output?: OutputOptions;
  json: (run: CollectedRun) => Record<string, unknown>;
  stream: (parts: AsyncIterable<RunEventPart>, sink: SseSink) => Promise<void>;
}

export interface RunResponderDeps {
  openai: EdgeConfig['openai'];
  runs: RunStarter;
  metrics: SurfaceMetrics;
}

export type ServeRun = (
  context: RequestContext,
  route: ResolvedRoute,
  requested: SurfaceRun,
  stream: boolean,
  writers: RunWriters,
) => Promise<void>;

/** How reasoning shows in an answer: as the request asked, inline unless `strict_output`. */
export function outputOptionsFor(openai: EdgeConfig['openai'], caller: RunCaller): OutputOptions {
  return { includeReasoning: caller.includeReasoning, inlineReasoning: !openai.strict_output };
}

export function createRunResponder(deps: RunResponderDeps): ServeRun {
  const { openai, runs, metrics } = deps;
  return async (context, route, requested, stream, writers) => {
    const response = context.response;
    // Set before the run: an error answer names what was dropped too.
    setDroppedParamsHeader(response, requested.caller);
    const signal = disconnectSignal(context.request.socket);
    requested.spec.collect = !stream;
    const run = await runs.start(route, requested, signal);
    try {
      if (!stream) {
        let collected: CollectedRun;
        try {
          collected = await run.collect(writers.output ?? outputOptionsFor(openai, requested.caller));
        } catch (error) {
          setRunHeaders(response, run);
          throw error;
        }
        const overhead = overheadOf(context, run, true);
        metrics.overhead(overhead / 1000);
        sendJson(context, 200, writers.json(collected), runHeaders(run, overhead));
        return;
      }
      setRunHeaders(response, run);
      const buffered = openai.strict_stream_buffer;
      const parts = buffered ? replay(await bufferRun(run.parts())) : run.parts();
      const sink = new SseSink(
        response,
        signal,
        () => {
          metrics.firstToken((performance.now() - context.arrivedAt) / 1000);
          // The head leaves with the first output: the attempt that produced it is the one to name.
          setRunHeaders(response, run);
          return { [OVERHEAD_HEADER]: formatMs(overheadOf(context, run, buffered)) };
        },
        buffered ? [] : [OVERHEAD_HEADER],
      );
      await writers.stream(parts, sink);
      const overhead = overheadOf(context, run, true);
      if (run.handle.overheadMs() !== undefined) metrics.overhead(overhead / 1000);
      sink.end(buffered ? {} : { [OVERHEAD_HEADER]: formatMs(overhead) });
    } finally {
      run.finish('client disconnected');
    }
  };
}

/** A buffered run as the async iterable the stream writers take. */
function replay(parts: RunEventPart[]): AsyncIterable<RunEventPart> {
  return {
    [Symbol.asyncIterator]() {
      let index = 0;
      return {
        next: () =>
          Promise.resolve(
            index < parts.length
              ? { value: parts[index++], done: false }
              : { value: undefined, done: true as const },
          ),
      };
    },
  };
}
