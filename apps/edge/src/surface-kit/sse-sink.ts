// Writes a server-sent-event response. Headers are sent lazily with the first event, so a run that fails before
// producing output can still be answered with a plain HTTP error. Writes honour socket backpressure: when the
// socket buffer is full the writer waits for 'drain' (or the client going away) instead of buffering without bound.
import type { ServerResponse } from 'node:http';

export class SseSink {
  private startedFlag = false;
  private corked = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly signal: AbortSignal,
    /** Extra headers computed when the stream starts (e.g. x-iop-overhead-ms so far). */
    private readonly headers: () => Record<string, string>,
    /** Trailer names announced up front, filled in by end(). */
    private readonly trailerNames: string[] = [],
  ) {}

  get started(): boolean {
    return this.startedFlag;
  }

  /** The client went away or the socket closed. */
  get closed(): boolean {
    return this.signal.aborted || this.response.destroyed;
  }

  start(): void {
    if (this.startedFlag) return;
    this.startedFlag = true;
    const response = this.response;
    response.statusCode = 200;
    response.setHeader('content-type', 'text/event-stream');
    response.setHeader('cache-control', 'no-cache');
    response.setHeader('connection', 'keep-alive');
    response.setHeader('x-accel-buffering', 'no');
    if (this.trailerNames.length > 0) response.setHeader('trailer', this.trailerNames.join(', '));
    for (const [name, value] of Object.entries(this.headers())) response.setHeader(name, value);
    // No flushHeaders(): start() always precedes a write or the end, and node:http sends the headers with that
    // first data in one socket write (one write less per stream, sooner first token).
  }

  async write(chunk: string): Promise<void> {
    if (!this.startedFlag) this.start();
    if (this.closed) return;
    // Events written in the same tick (several parts decoded from one read, finish + usage + [DONE]) leave in one
    // socket write instead of one each.
    if (!this.corked) {
      this.corked = true;
      this.response.cork();
      process.nextTick(() => {
        this.corked = false;
        this.response.uncork();
      });
    }
    if (this.response.write(chunk)) return;
    await this.drained();
  }

  end(trailers: Record<string, string> = {}): void {
    if (this.response.writableEnded || this.closed) return;
    if (!this.startedFlag) this.start();
    if (this.trailerNames.length > 0 && !this.response.destroyed) this.response.addTrailers(trailers);
    this.response.end();
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.response.off('drain', done);
        this.response.off('close', done);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      this.response.on('drain', done);
      this.response.on('close', done);
      this.signal.addEventListener('abort', done, { once: true });
    });
  }
}
