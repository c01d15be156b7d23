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
//
// Computed once per run attempt, by the run supervisor when it resolves the model's policy, and carried on the
// PlacementRequest (`affinityKey`): the router and the local placement only read it.
import crypto from 'node:crypto';
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
    return digest(scoped(principalId, 'key') + field(explicit));
  }
  if (!policy.hash_messages) return undefined;
  const kind = spec.kind ?? RunKind.RUN_KIND_CHAT;
  if (kind !== RunKind.RUN_KIND_CHAT) return undefined;
  const head = conversationHead(spec.messages);
  if (head === undefined) return undefined;
  // One string, hashed once: every run to an affinity model computes it on the hot path.
  let text = scoped(principalId, 'head');
  for (const message of head) {
    text += field(message.role) + field(message.content) + `${message.images.length}:`;
    for (const image of message.images) text += field(image);
    text += `${message.imageUrls.length}:`;
    for (const url of message.imageUrls) text += field(url);
  }
  return digest(text);
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

function scoped(principalId: string | undefined, source: 'key' | 'head'): string {
  return field(principalId ?? '') + field(source);
}

/** Length-prefixed (UTF-16 units of a JS string), so no two field sequences make the same text. */
function field(value: string): string {
  return `${value.length}:${value}`;
}

// crypto.hash (Node 20.12+) hashes in one call, about 3× faster than a Hash object for short texts.
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');

function digest(text: string): string {
  return sha256Hex(text).slice(0, KEY_CHARS);
}
