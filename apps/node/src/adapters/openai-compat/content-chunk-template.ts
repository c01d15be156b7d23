// The fast path for the chunk that makes up almost all of a chat-completions stream: one token of content (or of
// reasoning: `reasoning_content` / `reasoning`) and nothing else that counts. Servers send it as the same bytes every time except the content string (same id,
// model, created, index and `"finish_reason":null`), so once one such chunk has been parsed in full, the next ones
// are recognised by that prefix and suffix and their content is read straight out of the text, without
// JSON.parse (which was most of the node's CPU per streamed token).
//
// Soundness: a chunk is taken on the fast path only when it is the learned chunk with exactly one JSON string
// literal swapped in at the place of the delta's text field (the literal is checked to hold no quote, backslash or
// control character, so it is one complete, valid literal and its text is its value). Such a document parses to
// the learned one with another content: the same parts follow from it. The place is verified when learning by
// parsing the template with a probe string, and learning stops for a stream whose chunks keep differing (an id
// per chunk) so it never costs more than a second parse now and then.

/** The delta fields the fast path reads, and the part each one becomes. */
export type DeltaTextField = 'content' | 'reasoning_content' | 'reasoning';

/** Learned prefix/suffix of a plain content (or reasoning) chunk, per stream. */
export class ContentChunkTemplate {
  #prefix: string | undefined;
  #suffix: string | undefined;
  #type: 'text-delta' | 'reasoning-delta' = 'text-delta';
  /** The learned template has matched a chunk since it was learned. */
  #matched = false;
  /** The last chunk tried did not have the template's prefix and suffix. */
  #lastMissed = false;
  /** Learned templates that missed before matching anything; learning stops at MAX_MISSES. */
  #misses = 0;

  /** The part a matched chunk's text becomes. */
  get type(): 'text-delta' | 'reasoning-delta' {
    return this.#type;
  }

  /** The text of `data` when it is the learned chunk with another plain string, else undefined. */
  match(data: string): string | undefined {
    const prefix = this.#prefix;
    const suffix = this.#suffix;
    if (prefix === undefined || suffix === undefined) return undefined;
    const start = prefix.length;
    const end = data.length - suffix.length;
    if (
      end - start < 2 ||
      data.charCodeAt(start) !== QUOTE ||
      data.charCodeAt(end - 1) !== QUOTE ||
      // The short suffix first: it is what differs in the chunks that end a stream.
      !data.endsWith(suffix) ||
      !data.startsWith(prefix)
    ) {
      if (!this.#matched && !this.#lastMissed) this.#misses += 1;
      this.#lastMissed = true;
      return undefined;
    }
    this.#lastMissed = false;
    for (let index = start + 1; index < end - 1; index += 1) {
      const code = data.charCodeAt(index);
      // Escapes, quotes, control characters: valid or not, the full parse decides.
      if (code < 0x20 || code === QUOTE || code === BACKSLASH) return undefined;
    }
    this.#matched = true;
    return data.slice(start + 1, end - 1);
  }

  /**
   * Learns from a chunk that was parsed in full and is a plain delta chunk (the caller checks: one choice, index
   * 0, a delta whose only key is `field`, no finish reason, no usage, no error). Only when no template is
   * learned or the last chunk missed it, and not once learning stopped; keeps the old template when the
   * text's place cannot be found and verified.
   */
  learn(data: string, field: DeltaTextField, text: string): void {
    if (this.#misses >= MAX_MISSES) return;
    if (this.#prefix !== undefined && !this.#lastMissed) return;
    const key = `"${field}":`;
    const needle = `${key}${JSON.stringify(text)}`;
    const at = data.indexOf(needle);
    // Not found (the server escapes differently, or spaces after the colon) or ambiguous: no fast path.
    if (at === -1 || data.indexOf(needle, at + 1) !== -1) return;
    const prefix = data.slice(0, at + key.length);
    const suffix = data.slice(at + needle.length);
    if (!isProbeAtField(prefix, suffix, field, text)) {
      this.#misses += 1;
      return;
    }
    this.#prefix = prefix;
    this.#suffix = suffix;
    this.#type = field === 'content' ? 'text-delta' : 'reasoning-delta';
    this.#matched = false;
    this.#lastMissed = false;
  }

  /** Whether a template is learned (for tests). */
  get learned(): boolean {
    return this.#prefix !== undefined;
  }
}

const QUOTE = 34;
const BACKSLASH = 92;
/** After this many learned templates that did not match the next chunk, a stream stops learning. */
const MAX_MISSES = 3;

/** The template with a probe string in place of the text parses to that probe at choices[0].delta[field]. */
function isProbeAtField(prefix: string, suffix: string, field: DeltaTextField, text: string): boolean {
  const probe = text === 'iop-probe' ? 'iop-probe-2' : 'iop-probe';
  try {
    const parsed = JSON.parse(`${prefix}"${probe}"${suffix}`) as {
      choices?: { delta?: Partial<Record<DeltaTextField, unknown>> }[];
    };
    return parsed.choices?.[0]?.delta?.[field] === probe;
  } catch {
    return false;
  }
}
