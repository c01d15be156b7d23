// The token estimate a run reserves at admission (tpm and budgets), corrected to the backend's figures when the
// run ends. Roughly four characters of text per token; images count a flat amount.
import type { ChatMessage } from '@iop/wire';

const CHARS_PER_TOKEN = 4;
const TOKENS_PER_IMAGE = 256;

export function estimateTokens(messages: readonly ChatMessage[]): number {
  let characters = 0;
  let images = 0;
  for (const message of messages) {
    characters += message.content.length + message.reasoning.length;
    for (const call of message.toolCalls) characters += call.argumentsJson.length + call.name.length;
    images += message.images.length;
  }
  return Math.ceil(characters / CHARS_PER_TOKEN) + images * TOKENS_PER_IMAGE;
}
