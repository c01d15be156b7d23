// The fabric side of the service's run registry (service/run-registry.ts): RemoteRuns over the cluster's peer
// calls, and this edge's registry served to the other edges. A lookup names the whole key — principal, kind, id —
// and the edge holding the run answers only for exactly that key, so another principal's run is the same "none"
// as an unknown id on every edge. get / cancel / delete go to every live edge (`iop.call.runs.<edge>`, the first
// edge that holds it answers); a subscription is a peer stream (`iop.stream.runs.<edge>`) of RunUpdates.
import { RunRegistryError } from '../run-registry-error.js';
import {
  isRunKey,
  type LocalRuns,
  type RemoteRuns,
  type RunKey,
  type RunUpdate,
  type RunView,
} from '../placement/run-directory.js';
import type { PeerCalls } from './peer-calls.js';
import { PeerStreamError } from './peer-streams.js';

export const RUNS_TOPIC = 'runs';

type RunCall =
  { op: 'get'; key: RunKey } | { op: 'cancel'; key: RunKey; reason: string } | { op: 'delete'; key: RunKey };

/** Registry refusals as peer-stream codes (outside the JSON-RPC range), and back. */
const STREAM_CODES = { too_many_subscribers: 4001, subscriber_too_slow: 4002 } as const;

function streamError(error: unknown): PeerStreamError {
  if (
    error instanceof RunRegistryError &&
    (error.code === 'too_many_subscribers' || error.code === 'subscriber_too_slow')
  )
    return new PeerStreamError(STREAM_CODES[error.code], error.message);
  return new PeerStreamError(-32603, error instanceof Error ? error.message : String(error));
}

function registryError(error: unknown): RunRegistryError {
  if (error instanceof PeerStreamError) {
    if (error.code === STREAM_CODES.too_many_subscribers)
      return new RunRegistryError('too_many_subscribers', error.message);
    if (error.code === STREAM_CODES.subscriber_too_slow)
      return new RunRegistryError('subscriber_too_slow', error.message);
  }
  return new RunRegistryError('holder_lost', error instanceof Error ? error.message : String(error));
}

function parseCall(payload: unknown): RunCall | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const call = payload as Record<string, unknown>;
  if (!isRunKey(call['key'])) return undefined;
  const key: RunKey = { principal: call['key'].principal, kind: call['key'].kind, id: call['key'].id };
  switch (call['op']) {
    case 'get':
      return { op: 'get', key };
    case 'delete':
      return { op: 'delete', key };
    case 'cancel':
      return typeof call['reason'] === 'string' ? { op: 'cancel', key, reason: call['reason'] } : undefined;
    default:
      return undefined;
  }
}

/** A well-formed view from another edge (anything else is treated as no answer). */
function isView(value: unknown): value is RunView {
  return (
    typeof value === 'object' &&
    value !== null &&
    'state' in value &&
    typeof (value as { ended?: unknown }).ended === 'boolean'
  );
}

/** The other edges' registries, asked through `peers`. */
export function createRemoteRuns(peers: PeerCalls): RemoteRuns {
  const ask = async (call: RunCall): Promise<unknown> => {
    let answer;
    try {
      answer = await peers.ask(RUNS_TOPIC, call);
    } catch (error) {
      // An edge that could not be asked may hold it: not "none".
      throw registryError(error);
    }
    return answer && 'value' in answer ? answer.value : undefined;
  };
  return {
    async get(key) {
      const answer = await ask({ op: 'get', key });
      return isView(answer) ? answer : undefined;
    },
    async cancel(key, reason) {
      const answer = await ask({ op: 'cancel', key, reason });
      if (typeof answer !== 'object' || answer === null) return undefined;
      const result = answer as Record<string, unknown>;
      return isView(result['view']) && typeof result['alreadyEnded'] === 'boolean'
        ? { view: result['view'], alreadyEnded: result['alreadyEnded'] }
        : undefined;
    },
    async delete(key) {
      return (await ask({ op: 'delete', key })) === true;
    },
    async subscribe(key, signal) {
      let items: AsyncIterable<unknown> | undefined;
      try {
        items = await peers.open(RUNS_TOPIC, { key }, signal);
      } catch (error) {
        throw registryError(error);
      }
      if (!items) return undefined;
      const source = items;
      return (async function* (): AsyncGenerator<RunUpdate> {
        try {
          for await (const item of source) yield item as RunUpdate;
        } catch (error) {
          throw registryError(error);
        }
      })();
    },
  };
}

/** Answers the other edges' lookups from this edge's registry until the returned function is called. */
export function serveRuns(peers: PeerCalls, local: LocalRuns): () => void {
  const stopCalls = peers.serve(RUNS_TOPIC, async (payload) => {
    const call = parseCall(payload);
    // A malformed lookup names no run held here.
    if (!call) return undefined;
    switch (call.op) {
      case 'get': {
        const found = local.getLocal(call.key);
        return found ? { value: found } : undefined;
      }
      case 'cancel': {
        const result = await local.cancelLocal(call.key, call.reason);
        return result ? { value: result } : undefined;
      }
      case 'delete':
        return local.deleteLocal(call.key) ? { value: true } : undefined;
    }
  });
  const stopStreams = peers.serveStream(RUNS_TOPIC, (payload, signal) => {
    const key =
      typeof payload === 'object' && payload !== null ? (payload as { key?: unknown }).key : undefined;
    if (!isRunKey(key)) return undefined;
    let updates: AsyncIterable<RunUpdate> | undefined;
    try {
      updates = local.subscribeLocal({ principal: key.principal, kind: key.kind, id: key.id }, signal);
    } catch (error) {
      throw streamError(error);
    }
    if (!updates) return undefined;
    const source = updates;
    return (async function* () {
      try {
        yield* source;
      } catch (error) {
        throw streamError(error);
      }
    })();
  });
  return () => {
    stopCalls();
    stopStreams();
  };
}
