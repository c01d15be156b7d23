// Whose session a run uses. Sessions, their workspaces and their history on a node belong to the principal (API
// key) the run came in as: the edge's service turns every session id a surface asks for (an OpenAI slot base, an
// A2A context, a console/admin id) into the id the node sees, and no other code does. A keyed principal's ids
// start with a fixed-length digest of its id, so the pair (principal, surface id) is read back from the node's id
// without ambiguity: keys `team` and `team-a` can never meet however a surface spells its part. Anonymous runs (no
// keys configured; console and admin runs) keep the surface's id unchanged, as before keys existed. The node reads
// the owner back (sessionOwner) to keep one key's sessions out of another key's workspace.
import { createHash } from 'node:crypto';

/** Characters of the SHA-256 hex digest of the principal id kept (96 bits: no two keys of one edge collide). */
const DIGEST_CHARS = 24;

/**
 * The node-side session id of `sessionId` for `principal` (its id; undefined or '' = anonymous):
 * `k<24 hex>.<sessionId>` for a key, `sessionId` itself for anonymous runs. The result stays in the node's session
 * id alphabet (letters, digits, `.`, `_`, `-`) when `sessionId` does.
 */
export function principalSessionId(sessionId: string, principal: string | undefined): string {
  if (principal === undefined || principal === '') return sessionId;
  return `k${principalDigest(principal)}.${sessionId}`;
}

/** The fixed-length digest of a principal id its sessions carry (also keeps raw key ids off the node). */
export function principalDigest(principal: string): string {
  let digest = digests.get(principal);
  if (digest === undefined) {
    digest = createHash('sha256').update(principal, 'utf8').digest('hex').slice(0, DIGEST_CHARS);
    // Every run of a keyed principal asks for it: kept per principal id, bounded (an edge has a few keys; a
    // flood of distinct ids only restarts the table).
    if (digests.size >= MAX_REMEMBERED_DIGESTS) digests.clear();
    digests.set(principal, digest);
  }
  return digest;
}

const MAX_REMEMBERED_DIGESTS = 1024;
const digests = new Map<string, string>();

const OWNED = /^k([0-9a-f]{24})\./;

/** The principal digest a node-side session id carries; '' for an anonymous (operator or keyless) session. */
export function sessionOwner(sessionId: string): string {
  return OWNED.exec(sessionId)?.[1] ?? '';
}
