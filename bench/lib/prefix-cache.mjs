// A model of an inference server's prefix (KV) cache, for the affinity bench: what a request's prompt costs to
// prefill depends on how much of its message list the server has already seen.
//
// The prompt is a list of chat messages. Prefix i (the first i messages) is identified by a chained hash
// h_i = sha256(h_{i-1}, role, text), so two conversations that share a system prompt share that entry, and a
// conversation's turn k finds every earlier turn's prefix. An entry holds the tokens of its last message (the
// KV blocks that message added). A lookup walks the prefixes from the first message and stops at the first one
// the cache does not hold (a real server cannot use a block whose predecessor is gone). Memory is bounded in
// tokens: when an insert goes over `capacityTokens`, the least recently used entries are evicted. A hit touches
// the entries from the last to the first, so a prefix's head is always more recent than its tail and the tail
// goes first (as vLLM frees the end of a block chain before its start).
//
// Tokens are counted as a server's tokenizer would roughly count English text: one per 4 bytes of UTF-8, plus
// MESSAGE_OVERHEAD_TOKENS per message for the chat template's role markers.
import { createHash } from 'node:crypto';

export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Text of a chat message's content: a string, or the text parts of an array of parts; anything else is ''. */
export function messageText(message) {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) => (part && part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
      .join('');
  return '';
}

/** Tokens one message adds to a prompt. */
export function messageTokens(message) {
  return Math.ceil(Buffer.byteLength(messageText(message), 'utf8') / 4) + MESSAGE_OVERHEAD_TOKENS;
}

/** The chained prefix hashes of a message list: element i identifies messages[0..i]. */
export function prefixHashes(messages) {
  const hashes = [];
  let previous = '';
  for (const message of messages) {
    previous = createHash('sha256')
      .update(previous)
      .update('\u0000')
      .update(String(message?.role ?? ''))
      .update('\u0000')
      .update(messageText(message))
      .digest('hex');
    hashes.push(previous);
  }
  return hashes;
}

export class PrefixCache {
  /** @param {{ capacityTokens: number }} options */
  constructor(options) {
    if (!Number.isInteger(options.capacityTokens) || options.capacityTokens < 1)
      throw new RangeError('capacityTokens must be a positive integer');
    this.capacityTokens = options.capacityTokens;
    /** hash → tokens of that prefix's last message; Map order is the LRU order (first = least recent). */
    this.entries = new Map();
    this.tokens = 0;
    this.evictedTokens = 0;
  }

  /**
   * How much of `messages` is cached: `cachedMessages` (the longest cached prefix, in messages), `cachedTokens`,
   * `unseenTokens` (what a prefill has to compute), `totalTokens`. Touches the cached entries.
   */
  lookup(messages) {
    const hashes = prefixHashes(messages);
    const tokens = messages.map(messageTokens);
    let cachedMessages = 0;
    while (cachedMessages < hashes.length && this.entries.has(hashes[cachedMessages])) cachedMessages += 1;
    this.#touch(hashes.slice(0, cachedMessages));
    const totalTokens = tokens.reduce((sum, value) => sum + value, 0);
    const cachedTokens = tokens.slice(0, cachedMessages).reduce((sum, value) => sum + value, 0);
    return { cachedMessages, cachedTokens, unseenTokens: totalTokens - cachedTokens, totalTokens };
  }

  /** Records every prefix of `messages` as cached (after a prefill, or after the answer was generated). */
  insert(messages) {
    const hashes = prefixHashes(messages);
    for (let index = 0; index < hashes.length; index += 1) {
      if (this.entries.has(hashes[index])) continue;
      const tokens = messageTokens(messages[index]);
      this.entries.set(hashes[index], tokens);
      this.tokens += tokens;
    }
    this.#touch(hashes);
    this.#evict(new Set(hashes));
  }

  /** Moves `hashes` to the most recent end, the last one first, so the first ends up the most recent. */
  #touch(hashes) {
    for (let index = hashes.length - 1; index >= 0; index -= 1) {
      const tokens = this.entries.get(hashes[index]);
      this.entries.delete(hashes[index]);
      this.entries.set(hashes[index], tokens);
    }
  }

  /** Evicts least recently used entries until within capacity; `keep` (the prompt just inserted) goes last. */
  #evict(keep) {
    for (const [hash, tokens] of this.entries) {
      if (this.tokens <= this.capacityTokens) return;
      if (keep.has(hash)) continue;
      this.entries.delete(hash);
      this.tokens -= tokens;
      this.evictedTokens += tokens;
    }
    // A single prompt larger than the whole cache: keep its head, drop its tail.
    for (const hash of [...keep].reverse()) {
      if (this.tokens <= this.capacityTokens) return;
      const tokens = this.entries.get(hash);
      if (tokens === undefined) continue;
      this.entries.delete(hash);
      this.tokens -= tokens;
      this.evictedTokens += tokens;
    }
  }
}
