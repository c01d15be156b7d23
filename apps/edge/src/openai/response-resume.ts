// The resume payload of a background response (run registry kind `openai.response`): what the edge needs to place
// the response again when it restarts before the run was dispatched. Stored beside the response's record only
// while it is `queued` (the registry writes it as null on dispatch and on end) and never answered by GET, the
// input items or the cluster's copy. Versioned: a payload of another version, or one that does not parse, cannot be
// resumed and the response ends as `edge_restarted`.
//
// Who the run was for is the record's key (its principal id, re-resolved from the keys in force when it resumes);
// what it asked is the validated request body, re-planned through the surface's normal path; the caller context
// the body does not carry (traceparent, affinity key, parent run) is kept as the request gave it. The deadline is
// counted from `submittedAtMs`: a resumed run gets what is left of `openai.timeout_sec`.
import type { ParentRef } from '../service/types.js';
import type { ResponsesRequestBody } from './request-schemas.js';

export const RESPONSE_RESUME_VERSION = 1;

export interface ResponseResumePayload {
  v: typeof RESPONSE_RESUME_VERSION;
  /** When the request was accepted (epoch ms): the deadline and the stored conversation count from it. */
  submittedAtMs: number;
  /** The body as the surface validated it. */
  request: ResponsesRequestBody;
  /** The request's W3C `traceparent`, continued by the run's spans. */
  traceparent?: string;
  /** The run's affinity key (`x-session-id`, else the body's `user`), as the request derived it. */
  affinityKey?: string;
  /** An agent's model call: the agent run it was a child of. */
  parent?: ParentRef;
}

/** The payload of a stored record, or undefined when it is absent, of another version or malformed. */
export function parseResponseResume(value: unknown): ResponseResumePayload | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const payload = value as Record<string, unknown>;
  if (payload['v'] !== RESPONSE_RESUME_VERSION) return undefined;
  const submittedAtMs = payload['submittedAtMs'];
  if (typeof submittedAtMs !== 'number' || !Number.isFinite(submittedAtMs)) return undefined;
  const request = payload['request'];
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return undefined;
  for (const field of ['traceparent', 'affinityKey'] as const) {
    if (payload[field] !== undefined && typeof payload[field] !== 'string') return undefined;
  }
  const parent = payload['parent'];
  if (parent !== undefined && !isParentRef(parent)) return undefined;
  return value as ResponseResumePayload;
}

function isParentRef(value: unknown): value is ParentRef {
  if (typeof value !== 'object' || value === null) return false;
  const parent = value as Record<string, unknown>;
  return typeof parent['runId'] === 'string' && typeof parent['nodeId'] === 'string';
}

/**
 * What is left of a run deadline of `timeoutMs` counted from `submittedAtMs` at `nowMs`: undefined when the run has
 * no deadline (timeout 0: the adapter's own), else the remaining milliseconds (0 or less: it has passed).
 */
export function remainingDeadlineMs(
  timeoutMs: number | undefined,
  submittedAtMs: number,
  nowMs: number,
): number | undefined {
  if (timeoutMs === undefined) return undefined;
  return timeoutMs - Math.max(0, nowMs - submittedAtMs);
}
