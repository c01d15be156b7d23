// The token estimate a run reserves at admission (tpm and budgets), corrected to the backend's figures when the
// run ends. Roughly four characters of text per token; images count a flat amount.
import type { ChatMessage } from '@iop/wire';

const CHARS_PER_TOKEN = 4;
const TOKENS_PER_IMAGE = 256;

/** Tokens of `characters` characters of text (the same four-per-token rule). */
export function estimateTextTokens(characters: number): number {
  return Math.ceil(Math.max(0, characters) / CHARS_PER_TOKEN);
}

export function estimateTokens(messages: readonly ChatMessage[]): number {
  let characters = 0;
  let images = 0;
  for (const message of messages) {
    characters += message.content.length + message.reasoning.length;
    for (const call of message.toolCalls) characters += call.argumentsJson.length + call.name.length;
    images += message.images.length;
  }
  return estimateTextTokens(characters) + images * TOKENS_PER_IMAGE;
}
