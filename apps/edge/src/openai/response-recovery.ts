// How background responses (run registry kind `openai.response`) are kept across edge restarts: a response's
// record is written when its status changes (queued → in_progress → a final status), never per output token.
// After an edge restart (agent-contract/outer/openai-compatible-api.md, "Restart semantics"):
//   - a response still `queued` whose record carries a resume payload (it is `resumable`) is placed again by the
//     surface (background-responses.ts resume, response-resumption.ts): same id, deadline counted from its first
//     submission, the key re-resolved by id; it ends `failed` naming why when it cannot be (key gone, model no
//     longer allowed, deadline passed);
//   - a response left `in_progress` (its run died with that process), or queued without a readable payload, is
//     ended as `failed` with `error.code` `edge_restarted` by `interrupted`.
// In cluster mode, a response whose edge left the cluster while it was going is answered by another edge from the
// fabric's copy of its record (which never carries the payload), ended the same way with `error.code` `edge_lost`
// naming both edges (cluster failover): queued ones too.
import type { RunKindDurability } from '../service/run-registry.js';

export const EDGE_RESTARTED_CODE = 'edge_restarted';
export const EDGE_LOST_CODE = 'edge_lost';

export const RESPONSE_DURABILITY: RunKindDurability = {
  revision: (state) => String(asObject(state)['status']),
  // Only a response not yet dispatched keeps its resume payload.
  resumable: (state) => asObject(state)['status'] === 'queued',
  interrupted: (state, restart) => {
    const body = asObject(state);
    const status = typeof body['status'] === 'string' ? body['status'] : 'in_progress';
    const edge = restart.edgeId || '(unnamed)';
    const error =
      restart.answeredBy === undefined
        ? {
            code: EDGE_RESTARTED_CODE,
            message:
              `the edge ${edge} restarted while this response was ${status}; ` +
              'its run did not finish and was not started again. Send the request again.',
          }
        : {
            code: EDGE_LOST_CODE,
            message:
              `the edge ${edge} left the cluster while this response was ${status} (cluster failover: edge ` +
              `${restart.answeredBy} answered from the cluster's record); its run did not finish and was not ` +
              'started again. Send the request again.',
          };
    return { ...body, status: 'failed', error };
  },
};

function asObject(state: unknown): Record<string, unknown> {
  return typeof state === 'object' && state !== null ? (state as Record<string, unknown>) : {};
}
