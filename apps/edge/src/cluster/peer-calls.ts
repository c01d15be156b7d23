// Calls a surface makes to the other edges of the cluster for state only one edge holds (A2A tasks): `ask` sends
// a topic's payload to every live edge (request `iop.call.<topic>.<edge>`) and resolves the first edge that had
// an answer; `serve` answers them here. JSON both ways; each request is bounded by a timeout. An edge that could
// not be asked (no sealed answer in time, gone meanwhile) is never taken for "none": `ask` fails when no edge had
// an answer and one could not be asked, `gather` when any could not (PeerCallError). Streams (A2A
// `tasks/resubscribe`) go through peer-streams.ts: `open` / `serveStream`.
import type { Clock } from '../clock.js';
import type { FabricBus } from './fabric-bus.js';
import { createPeerStreams, type PeerStreams } from './peer-streams.js';

/** One edge's answer: a value, or a typed error of the surface (e.g. a JSON-RPC code). */
export type PeerAnswer = { value: unknown } | { error: { code: number; message: string } };

/** Some live edge could not be asked, so "no edge has it" or a total cannot be told. Transient. */
export class PeerCallError extends Error {
  override readonly name = 'PeerCallError';
  readonly fault = 'transient' as const;
  constructor(
    /** The edges that did not answer. */
    readonly edges: readonly string[],
    message: string,
  ) {
    super(message);
  }
}

/** A handler's answer: undefined = this edge does not have it. */
export type PeerHandler = (payload: unknown) => Promise<PeerAnswer | undefined>;

export interface PeerCalls extends PeerStreams {
  /** Answers `topic` from other edges until the returned function is called. */
  serve(topic: string, handler: PeerHandler): () => void;
  /**
   * The first answer of a live edge other than this one; undefined when every one answered that it has none.
   * PeerCallError when none had it and some could not be asked.
   */
  ask(topic: string, payload: unknown): Promise<PeerAnswer | undefined>;
  /**
   * Every answer of the live edges other than this one, by edge id (edges that have none are left out).
   * PeerCallError when some could not be asked.
   */
  gather(topic: string, payload: unknown): Promise<Map<string, PeerAnswer>>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function createPeerCalls(deps: {
  nc: FabricBus;
  clock: Clock;
  edgeId: string;
  liveEdges(): string[];
  timeoutMs?: number;
}): PeerCalls {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const streams = createPeerStreams({ ...deps, timeoutMs });
  type Asked = { edgeId: string; answer: PeerAnswer | null } | { edgeId: string; failed: string };
  const askEvery = (topic: string, payload: unknown): Promise<Asked[]> => {
    const data = encoder.encode(JSON.stringify(payload));
    return Promise.all(
      deps.liveEdges().map(async (edgeId): Promise<Asked> => {
        try {
          const response = await deps.nc.request(`iop.call.${topic}.${edgeId}`, data, {
            timeout: timeoutMs,
            to: edgeId,
          });
          const answer = (JSON.parse(decoder.decode(response.data)) as { answer?: PeerAnswer | null }).answer;
          return { edgeId, answer: answer ?? null };
        } catch (error) {
          return { edgeId, failed: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
  };
  const unreachable = (topic: string, asked: Asked[]): PeerCallError | undefined => {
    const failed = asked.filter((entry) => 'failed' in entry);
    if (failed.length === 0) return undefined;
    return new PeerCallError(
      failed.map((entry) => entry.edgeId),
      `${topic}: ${failed.map((entry) => `edge ${entry.edgeId} could not be asked (${'failed' in entry ? entry.failed : ''})`).join('; ')}`,
    );
  };
  return {
    open: (topic, payload, signal) => streams.open(topic, payload, signal),
    serveStream: (topic, handler) => streams.serveStream(topic, handler),
    serve(topic, handler) {
      const subscription = deps.nc.subscribe(`iop.call.${topic}.${deps.edgeId}`, {
        bound: true,
        callback: (error, msg) => {
          if (error) return;
          void (async () => {
            let answer: PeerAnswer | undefined;
            try {
              answer = await handler(JSON.parse(decoder.decode(msg.data)) as unknown);
            } catch (caught) {
              answer = {
                error: { code: -32603, message: caught instanceof Error ? caught.message : String(caught) },
              };
            }
            msg.respond(encoder.encode(JSON.stringify({ answer: answer ?? null })));
          })();
        },
      });
      return () => subscription.unsubscribe();
    },
    async ask(topic, payload) {
      const asked = await askEvery(topic, payload);
      for (const entry of asked) if ('answer' in entry && entry.answer !== null) return entry.answer;
      const error = unreachable(topic, asked);
      if (error) throw error;
      return undefined;
    },
    async gather(topic, payload) {
      const asked = await askEvery(topic, payload);
      const error = unreachable(topic, asked);
      if (error) throw error;
      const answers = new Map<string, PeerAnswer>();
      for (const entry of asked)
        if ('answer' in entry && entry.answer !== null) answers.set(entry.edgeId, entry.answer);
      return answers;
    },
  };
}
