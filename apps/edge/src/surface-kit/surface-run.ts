// SurfaceRun: what a validated OpenAI-compatible (or Anthropic Messages) request asks the edge to run, whichever
// surface and endpoint it came through. The run itself is the service's RunSpec, built by the surface and handed
// to submitRun as it is (one shape from surface to placement: nothing copies it on the way). Beside it, the
// caller: who asked and how the answer is presented, which only the surface needs. Plus the conversions every
// surface shares: who is asking (withCaller, with the conversation's affinity key), a tool definition.
import type { Principal } from '../governance/principal.js';
import type { ParentRef, RunSpec } from '../service/types.js';
import type { RequestContext } from './request-context.js';

/** Who asked for a run, and how its answer is presented: what the surface keeps beside the service's spec. */
export interface RunCaller {
  /** Who asked (the API key's principal); undefined = anonymous (no keys configured). */
  principal?: Principal;
  /** Set for an agent's model call: the agent run this request is a child run of. */
  parent?: ParentRef;
  /** The request's W3C `traceparent` header, continued by the run's spans. */
  traceparent?: string;
  /** Reasoning deltas are returned to the caller as reasoning (reasoning_content / reasoning items). */
  includeReasoning: boolean;
  /** Fields the model's `drop_unsupported` removed (the `x-iop-dropped-params` header). */
  droppedParams?: string[];
}

export interface SurfaceRun {
  /** The service's spec, built by the surface; the run starter hands this object to submitRun. */
  readonly spec: RunSpec;
  readonly caller: RunCaller;
}

/** What every spec of one run starter carries: its session slot base and the run deadline (run-starter.ts). */
export type RunBase = Pick<RunSpec, 'session' | 'timeoutMs'>;

/** Longest affinity key taken from a request (a longer `x-session-id` or `user` is cut: it is hashed anyway). */
const MAX_AFFINITY_KEY_CHARS = 1024;

/**
 * The conversation a request names, the run's explicit affinity key (RunSpec.affinityKey): its `x-session-id`
 * header, else `fallback` (OpenAI `user`, Anthropic `metadata.user_id`); undefined when neither is a non-empty
 * string. The one place a surface derives it; placement scopes and hashes it once per attempt (affinity-key.ts).
 */
export function requestAffinityKey(
  sessionHeader: string | string[] | undefined,
  fallback: unknown,
): string | undefined {
  const header = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
  const key = typeof header === 'string' && header.trim() !== '' ? header.trim() : fallback;
  if (typeof key !== 'string' || key === '') return undefined;
  return key.slice(0, MAX_AFFINITY_KEY_CHARS);
}

/**
 * Adds who is asking, in which trace and in which conversation: the key's principal and parent run, the
 * request's `traceparent` header, and its affinity key (`x-session-id`, else `conversation`: the body's own name
 * for it). Fills `run` in place (it was just built for this request) and returns it.
 */
export function withCaller(run: SurfaceRun, context: RequestContext, conversation: unknown): SurfaceRun {
  const { caller, spec } = run;
  caller.principal = context.principal;
  if (context.parent) caller.parent = context.parent;
  const headers = context.request.headers;
  const traceparent = headers.traceparent;
  if (typeof traceparent === 'string' && traceparent !== '') caller.traceparent = traceparent;
  const affinityKey = requestAffinityKey(headers['x-session-id'], conversation);
  if (affinityKey !== undefined) spec.affinityKey = affinityKey;
  return run;
}

export function toolDefinition(name: string, description: string | null | undefined, parameters: unknown) {
  return {
    name,
    description: description ?? '',
    parametersJson: parameters == null ? '' : JSON.stringify(parameters),
  };
}
