// The conversation affinity key of a model run (the pool prefers the provider that served the key last).
//
// Sources, first present wins (agent-contract/inner/edge-config-runtime-refresh.md, "Conversation affinity"):
// 1. the run's explicit key (RunSpec.affinityKey): the `x-session-id` header, else the OpenAI `user` field or the
//    Anthropic `metadata.user_id`, or the A2A context id, set by the surface;
// 2. with the model's `affinity.hash_messages` (default on), for a chat run: the conversation's head — every
//    `system`/`developer` message before the first `user` message, and that first `user` message (role, text,
//    images, image URLs). Later turns only append messages, so turn n and n+1 of one conversation have the same
//    head; a run without a user message has no head key.
//
// The key is scoped by the run's principal the way sessions are (@iop/wire session-owner.ts): the same session id
// or the same conversation sent with two API keys gives two different keys, so one key's traffic never steers
// another's. What the pool keeps is a SHA-256 digest (hex, 32 characters) of principal, source and key: fixed
// size whatever the client sent, and no message text in memory.
import { createHash, type Hash } from 'node:crypto';
import { RunKind, type ChatMessage } from '@iop/wire';
import type { ModelAffinityConfig } from '@iop/config';
import type { RunSpec } from './run-types.js';

/** Hex characters of the digest kept (128 bits). */
const KEY_CHARS = 32;

/**
 * The scoped affinity key of a run to a model with `policy`, or undefined when the model has affinity off or the
 * run has no key (no explicit key, and no head to hash).
 */
export function affinityKeyFor(
  spec: Pick<RunSpec, 'affinityKey' | 'messages' | 'kind'>,
  principalId: string | undefined,
  policy: ModelAffinityConfig,
): string | undefined {
  if (!policy.enabled) return undefined;
  const explicit = spec.affinityKey;
  if (explicit !== undefined && explicit !== '') {
    const hash = scopedHash(principalId, 'key');
    field(hash, explicit);
    return digest(hash);
  }
  if (!policy.hash_messages) return undefined;
  const kind = spec.kind ?? RunKind.RUN_KIND_CHAT;
  if (kind !== RunKind.RUN_KIND_CHAT) return undefined;
  const head = conversationHead(spec.messages);
  if (head === undefined) return undefined;
  const hash = scopedHash(principalId, 'head');
  for (const message of head) {
    field(hash, message.role);
    field(hash, message.content);
    hash.update(`${message.images.length}:`);
    for (const image of message.images) field(hash, image);
    hash.update(`${message.imageUrls.length}:`);
    for (const url of message.imageUrls) field(hash, url);
  }
  return digest(hash);
}

/**
 * The stable head of a conversation: the leading system/developer messages and the first user message;
 * undefined when there is no user message before anything else (nothing stable to hash).
 */
export function conversationHead(messages: readonly ChatMessage[]): ChatMessage[] | undefined {
  const head: ChatMessage[] = [];
  for (const message of messages) {
    if (message.role === 'system' || message.role === 'developer') {
      head.push(message);
      continue;
    }
    if (message.role !== 'user') return undefined;
    head.push(message);
    return head;
  }
  return undefined;
}

function scopedHash(principalId: string | undefined, source: 'key' | 'head'): Hash {
  const hash = createHash('sha256');
  field(hash, principalId ?? '');
  field(hash, source);
  return hash;
}

/** Length-prefixed, so no two field sequences hash the same bytes. */
function field(hash: Hash, value: string): void {
  hash.update(`${Buffer.byteLength(value, 'utf8')}:`);
  hash.update(value, 'utf8');
}

function digest(hash: Hash): string {
  return hash.digest('hex').slice(0, KEY_CHARS);
}
