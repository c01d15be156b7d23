// The secret an agent run presents on its model endpoint (issue 42): made by the edge for that run alone when a run
// of a `fabric_model` profile is dispatched, sent to the node in RunRequest.model_access, and checked when the
// agent's model call reaches the edge's surface over the node's link. It is `iop-run-` + base64url(HMAC-SHA256(key,
// run id)) under a random key drawn once per edge process: nothing is stored per run, nobody without the key can
// make one, and a restarted edge (whose runs all ended) invalidates every secret it made. A secret proves only
// which run it was made for; whether that run still lives is the service's answer (resolveParent), so a secret
// taken from a finished run is refused there.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'iop-run-';

export interface RunSecrets {
  /** The secret of run `runId`. */
  issue(runId: string): string;
  /** True when `presented` is the secret of `runId` (constant time in the secret's bytes). */
  verify(runId: string, presented: string): boolean;
}

/** Secrets under `key` (default: 32 random bytes, this process only). */
export function createRunSecrets(key: Buffer = randomBytes(32)): RunSecrets {
  const digest = (runId: string): Buffer => createHmac('sha256', key).update(runId, 'utf8').digest();
  return {
    issue: (runId) => `${PREFIX}${digest(runId).toString('base64url')}`,
    verify(runId, presented) {
      const expected = Buffer.from(`${PREFIX}${digest(runId).toString('base64url')}`, 'utf8');
      const given = Buffer.from(presented, 'utf8');
      // Lengths differ only for a malformed secret: its length is no secret.
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}
