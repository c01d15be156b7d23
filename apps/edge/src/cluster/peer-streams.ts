// Streams a surface opens on another edge for state only that edge holds (A2A `tasks/resubscribe` of a task
// another edge took). `open` asks every live edge (request `iop.stream.<topic>.<edge>` naming the subject the
// items go to, `iop.streamed.<self>.<stream id>`); the one edge that holds it answers `found` and publishes the
// items there in order, then `end` (or an `error` of the surface); the others answer `not found`. The opener's
// queue is bounded; a client leaving sends `iop.stream-cancel.<holder>`; a holder that leaves the cluster ends the
// stream with an error. JSON both ways.
import { randomBytes } from 'node:crypto';
import { repeat, type Clock } from '../clock.js';
import type { FabricBus, FabricSubscription } from './fabric-bus.js';

/** A typed error of the surface (e.g. a JSON-RPC code), passed on as it is. */
export class PeerStreamError extends Error {
  override readonly name = 'PeerStreamError';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A holder's stream: the items, or undefined when this edge does not hold it. Throwing PeerStreamError (before
 * or while iterating) is the surface's error, passed to the opener.
 */
export type PeerStreamHandler = (payload: unknown, signal: AbortSignal) => AsyncIterable<unknown> | undefined;

export interface PeerStreams {
  /** Serves `topic` streams held here until the returned function is called. */
  serveStream(topic: string, handler: PeerStreamHandler): () => void;
  /**
   * The stream of the live edge that holds it (its error as PeerStreamError); undefined when none does. Aborting
   * `signal` ends it on the holder too.
   */
  open(topic: string, payload: unknown, signal: AbortSignal): Promise<AsyncIterable<unknown> | undefined>;
}

type StreamRequest = { payload: unknown; to: string; streamId: string };
type StreamAnswer = { found: false } | { found: true } | { error: { code: number; message: string } };
type StreamMessage = { item: unknown } | { end: true } | { error: { code: number; message: string } };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function encode(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

function errorOf(error: unknown): { code: number; message: string } {
  if (error instanceof PeerStreamError) return { code: error.code, message: error.message };
  return { code: -32603, message: error instanceof Error ? error.message : String(error) };
}

/** What the peer streams of one edge use. */
interface PeerStreamsDeps {
  nc: FabricBus;
  /** Runs the openers' liveness checks. */
  clock: Clock;
  edgeId: string;
  liveEdges(): string[];
  /** How long `open` waits for the edges' answers (default 10 s). */
  timeoutMs?: number;
  /** Items an opener buffers before the stream ends as too slow (default 1024). */
  maxQueued?: number;
  /** How often an opener checks that the holder is still live (default 1 s). */
  livenessMs?: number;
}

export function createPeerStreams(deps: PeerStreamsDeps): PeerStreams {
  return { serveStream: streamServer(deps), open: streamOpener(deps) };
}

/** The holder's side: serves the streams held here, and stops one when the edge that opened it cancels it. */
function streamServer(deps: PeerStreamsDeps): PeerStreams['serveStream'] {
  const { nc, edgeId } = deps;
  /** Streams served here, by `<opener subject>`: aborted by a cancel or when serving stops. */
  const served = new Map<string, AbortController>();

  // Lives as long as the connection (the cluster drains it on close).
  nc.subscribe(`iop.stream-cancel.${edgeId}`, {
    bound: true,
    callback: (error, msg) => {
      if (error) return;
      try {
        const { to } = JSON.parse(decoder.decode(msg.data)) as { to: string };
        // Only the edge that opened the stream (its subject names it) may cancel it.
        if (typeof to === 'string' && to.startsWith(`iop.streamed.${msg.sender}.`)) served.get(to)?.abort();
      } catch {
        // A malformed cancel names no stream.
      }
    },
  });

  async function pump(to: string, items: AsyncIterable<unknown>, controller: AbortController): Promise<void> {
    try {
      for await (const item of items) {
        if (controller.signal.aborted) return;
        nc.publish(to, encode({ item } satisfies StreamMessage));
      }
      if (!controller.signal.aborted) nc.publish(to, encode({ end: true } satisfies StreamMessage));
    } catch (error) {
      if (!controller.signal.aborted && !nc.isClosed()) {
        nc.publish(to, encode({ error: errorOf(error) } satisfies StreamMessage));
      }
    } finally {
      served.delete(to);
    }
  }

  return (topic, handler) => {
    const subscription = nc.subscribe(`iop.stream.${topic}.${edgeId}`, {
      bound: true,
      callback: (error, msg) => {
        if (error) return;
        let request: StreamRequest;
        try {
          request = JSON.parse(decoder.decode(msg.data)) as StreamRequest;
          // Items go only to the asking edge's own subjects.
          if (typeof request.to !== 'string' || !request.to.startsWith(`iop.streamed.${msg.sender}.`))
            throw new Error('to');
        } catch {
          msg.respond(encode({ error: { code: -32600, message: 'malformed stream request' } }));
          return;
        }
        const controller = new AbortController();
        let items: AsyncIterable<unknown> | undefined;
        try {
          items = handler(request.payload, controller.signal);
        } catch (caught) {
          msg.respond(encode({ error: errorOf(caught) } satisfies StreamAnswer));
          return;
        }
        if (!items) {
          msg.respond(encode({ found: false } satisfies StreamAnswer));
          return;
        }
        served.get(request.to)?.abort();
        served.set(request.to, controller);
        msg.respond(encode({ found: true } satisfies StreamAnswer));
        void pump(request.to, items, controller);
      },
    });
    return () => {
      subscription.unsubscribe();
      for (const controller of served.values()) controller.abort();
    };
  };
}

/**
 * The opener's side: asks every live edge, then relays the holder's items through a bounded queue until the end,
 * an error, the reader leaving or the holder leaving the cluster.
 */
function streamOpener(deps: PeerStreamsDeps): PeerStreams['open'] {
  const { nc, edgeId } = deps;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const maxQueued = deps.maxQueued ?? 1024;
  const livenessMs = deps.livenessMs ?? 1000;
  const prefix = randomBytes(6).toString('hex');
  let sequence = 0;

  return async (topic, payload, signal) => {
    const to = `iop.streamed.${edgeId}.${prefix}${(sequence += 1).toString(36)}`;
    const queue: StreamMessage[] = [];
    let wake: (() => void) | undefined;
    /** The edge that holds the stream, once it answered. */
    const source: { holder?: string } = {};
    let closed = false;
    const finish = (message?: StreamMessage): void => {
      if (closed) return;
      if (message) queue.push(message);
      closed = true;
      subscription.unsubscribe();
      stopLiveness();
      signal.removeEventListener('abort', onAbort);
      wake?.();
    };
    // Subscribed before asking: no item can arrive unseen.
    const subscription: FabricSubscription = nc.subscribe(to, {
      callback: (error, msg) => {
        if (error || closed) return;
        let message: StreamMessage;
        try {
          message = JSON.parse(decoder.decode(msg.data)) as StreamMessage;
        } catch {
          finish({ error: { code: -32603, message: 'malformed item from the edge holding the stream' } });
          return;
        }
        if (!('item' in message)) {
          finish(message);
          return;
        }
        if (queue.length >= maxQueued) {
          cancel();
          finish({
            error: { code: -32603, message: `the reader fell more than ${maxQueued} items behind` },
          });
          return;
        }
        queue.push(message);
        wake?.();
      },
    });
    /** Set when the stream must stop before the holder is known (its items may come before its answer). */
    let cancelWanted = false;
    const cancel = (): void => {
      if (source.holder === undefined) cancelWanted = true;
      else if (!nc.isClosed()) {
        try {
          nc.publish(`iop.stream-cancel.${source.holder}`, encode({ to }), { to: source.holder });
        } catch {
          // The holder left the membership view: its streams ended with it.
        }
      }
    };
    const onAbort = (): void => {
      cancel();
      finish();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const stopLiveness = repeat(deps.clock, livenessMs, () => {
      const holder = source.holder;
      if (holder !== undefined && !deps.liveEdges().includes(holder)) {
        finish({ error: { code: -32603, message: `edge ${holder}, which held the stream, is gone` } });
      }
    });

    const request = encode({ payload, to, streamId: to } satisfies StreamRequest);
    const answers = await Promise.all(
      deps.liveEdges().map(async (edge): Promise<[string, StreamAnswer | undefined]> => {
        try {
          const response = await nc.request(`iop.stream.${topic}.${edge}`, request, {
            timeout: timeoutMs,
            to: edge,
          });
          return [edge, JSON.parse(decoder.decode(response.data)) as StreamAnswer];
        } catch {
          return [edge, undefined];
        }
      }),
    );
    const unasked = answers.filter(([, answer]) => answer === undefined).map(([edge]) => edge);
    const found = answers.find(([, answer]) => answer !== undefined && 'found' in answer && answer.found);
    const refused = answers.find(([, answer]) => answer !== undefined && 'error' in answer);
    if (!found) {
      finish();
      if (refused?.[1] && 'error' in refused[1]) {
        throw new PeerStreamError(refused[1].error.code, refused[1].error.message);
      }
      // An edge that could not be asked may hold it: not "none".
      if (unasked.length > 0) {
        throw new PeerStreamError(-32603, `edge ${unasked.join(', ')} could not be asked for the stream`);
      }
      return undefined;
    }
    source.holder = found[0];
    if (signal.aborted) onAbort();
    else if (cancelWanted) cancel();
    return {
      async *[Symbol.asyncIterator]() {
        try {
          for (;;) {
            const message = queue.shift();
            if (message) {
              if ('item' in message) {
                yield message.item;
                continue;
              }
              if ('error' in message) throw new PeerStreamError(message.error.code, message.error.message);
              return;
            }
            if (closed) return;
            await new Promise<void>((resolve) => {
              wake = () => {
                wake = undefined;
                resolve();
              };
            });
          }
        } finally {
          // The reader stopped early (client gone): the holder stops too.
          if (!closed) {
            cancel();
            finish();
          }
        }
      },
    };
  };
}
