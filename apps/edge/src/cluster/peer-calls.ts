// Calls a surface makes to the other edges of the cluster for state only one edge holds (A2A tasks): `ask` sends
// a topic's payload to every live edge (request `iop.call.<topic>.<edge>`) and resolves the first edge that had
// an answer; `serve` answers them here. JSON both ways; each request is bounded by a timeout. Streams (A2A
// `tasks/resubscribe`) go through peer-streams.ts: `open` / `serveStream`.
import type { FabricBus } from './fabric-bus.js';
import { createPeerStreams, type PeerStreams } from './peer-streams.js';

/** One edge's answer: a value, or a typed error of the surface (e.g. a JSON-RPC code). */
export type PeerAnswer = { value: unknown } | { error: { code: number; message: string } };

/** A handler's answer: undefined = this edge does not have it. */
export type PeerHandler = (payload: unknown) => Promise<PeerAnswer | undefined>;

export interface PeerCalls extends PeerStreams {
  /** Answers `topic` from other edges until the returned function is called. */
  serve(topic: string, handler: PeerHandler): () => void;
  /** The first answer of a live edge other than this one; undefined when none had it (or none answered). */
  ask(topic: string, payload: unknown): Promise<PeerAnswer | undefined>;
  /** Every answer of the live edges other than this one, by edge id (edges that did not answer are left out). */
  gather(topic: string, payload: unknown): Promise<Map<string, PeerAnswer>>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function createPeerCalls(deps: {
  nc: FabricBus;
  edgeId: string;
  liveEdges(): string[];
  timeoutMs?: number;
}): PeerCalls {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const streams = createPeerStreams({ ...deps, timeoutMs });
  const askEvery = (topic: string, payload: unknown): Promise<[string, PeerAnswer | null][]> => {
    const data = encoder.encode(JSON.stringify(payload));
    return Promise.all(
      deps.liveEdges().map(async (edgeId): Promise<[string, PeerAnswer | null]> => {
        try {
          const response = await deps.nc.request(`iop.call.${topic}.${edgeId}`, data, { timeout: timeoutMs });
          return [
            edgeId,
            (JSON.parse(decoder.decode(response.data)) as { answer: PeerAnswer | null }).answer,
          ];
        } catch {
          return [edgeId, null];
        }
      }),
    );
  };
  return {
    open: (topic, payload, signal) => streams.open(topic, payload, signal),
    serveStream: (topic, handler) => streams.serveStream(topic, handler),
    serve(topic, handler) {
      const subscription = deps.nc.subscribe(`iop.call.${topic}.${deps.edgeId}`, {
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
      const answers = await askEvery(topic, payload);
      return answers.find((answer): answer is [string, PeerAnswer] => answer[1] !== null)?.[1];
    },
    async gather(topic, payload) {
      const answers = await askEvery(topic, payload);
      return new Map(answers.filter((answer): answer is [string, PeerAnswer] => answer[1] !== null));
    },
  };
}
