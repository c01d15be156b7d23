// GET /api/v1/stream: the dashboard's live feed (server-sent events): the overview every interval (one shared
// frame, overview-route.ts), each run's summary as it changes, and the charts every fifth interval (at least 1 s).
// Bounded: at most `maxStreams` feeds at once (503 over it); a feed ends when its client goes away or `close()`.
import type http from 'node:http';
import type { Clock, ClockTimer } from '../clock.js';
import type { UiRun, UiStreamEvents } from '@iop/ui-api';
import type { Logger } from '../logging.js';
import type { ChartSeries } from './chart-series.js';
import { UiError } from './errors.js';
import type { RunLog } from './run-log.js';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';
import { sseFrame, startSse } from './ui-http.js';

export interface LiveFeedsDeps {
  /** The overview frame (shared between feeds). */
  overviewFrame: () => Promise<string>;
  runLog: Pick<RunLog, 'observe'>;
  charts: Pick<ChartSeries, 'snapshot'>;
  maxStreams: number;
  overviewIntervalMs: number;
  logger: Logger;
  clock: Clock;
}

export interface LiveFeeds {
  open(request: http.IncomingMessage, response: http.ServerResponse): void;
  /** Feeds open now (each released exactly once). */
  readonly count: number;
  /** Ends every open feed. */
  close(): void;
}

/** Calls `work` every `ms` on `clock` until the returned stop is called. */
function repeat(clock: Clock, ms: number, work: () => void): () => void {
  let timer: ClockTimer | undefined;
  let stopped = false;
  const arm = (): void => {
    timer = clock.setTimeout(() => {
      if (stopped) return;
      arm();
      work();
    }, ms);
  };
  arm();
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
  };
}

export function createLiveFeeds(deps: LiveFeedsDeps): LiveFeeds {
  const ends = new Set<() => void>();

  function open(request: http.IncomingMessage, response: http.ServerResponse): void {
    if (ends.size >= deps.maxStreams)
      throw new UiError('too_many_streams', 'too many live dashboard feeds open');
    const sink = startSse(response, disconnectSignal(request.socket));
    let ended = false;
    const write = (frame: string): void => {
      if (!ended) void sink.write(frame);
    };
    const send = <K extends keyof UiStreamEvents>(event: K, data: UiStreamEvents[K]): void =>
      write(sseFrame(event, data));
    let sending = false;
    const tick = (): void => {
      if (sending || ended) return;
      sending = true;
      deps
        .overviewFrame()
        .then(write)
        .catch((error: unknown) => deps.logger.warn({ error: String(error) }, 'ui: overview failed'))
        .finally(() => (sending = false));
    };
    const stopOverview = repeat(deps.clock, deps.overviewIntervalMs, tick);
    const stopCharts = repeat(deps.clock, Math.max(deps.overviewIntervalMs * 5, 1000), () =>
      send('charts', deps.charts.snapshot()),
    );
    const unobserve = deps.runLog.observe((run: UiRun) => send('run', run));
    const end = (): void => {
      if (ended) return;
      ended = true;
      stopOverview();
      stopCharts();
      unobserve();
      ends.delete(end);
      sink.end();
    };
    ends.add(end);
    // The response's close is the reliable signal: the client went away, or the stream was ended here.
    response.on('close', end);
    tick();
    send('charts', deps.charts.snapshot());
  }

  return {
    open,
    get count() {
      return ends.size;
    },
    close() {
      for (const end of [...ends]) end();
    },
  };
}
