// POST /v1/messages/count_tokens: an estimate of a request's input tokens. The edge has no tokenizer of the pool's
// models (they differ per backend and are not exposed over the node link), so it counts what a prompt template
// would hand the model — the text of every message, tool call and tool result, the tool definitions — at the
// common rule of thumb of one token per four UTF-8 bytes, plus a fixed cost per message and per image. Clients
// use the figure to decide when to compact a conversation; the usage of a real run is the backend's own count.
import type { Conversation } from './messages-request.js';

/** Bytes of text per token (the rule of thumb for English text and code with BPE tokenizers). */
export const BYTES_PER_TOKEN = 4;
/** Role markers and separators a chat template adds around each message. */
export const TOKENS_PER_MESSAGE = 4;
/** What one image costs (Anthropic's figure for an image of about 1.15 megapixels). */
export const TOKENS_PER_IMAGE = 1600;

export function estimateInputTokens(conversation: Conversation): number {
  let bytes = 0;
  let fixed = 0;
  for (const message of conversation.messages) {
    fixed += TOKENS_PER_MESSAGE + message.images.length * TOKENS_PER_IMAGE;
    bytes += Buffer.byteLength(message.content) + Buffer.byteLength(message.reasoning);
    for (const call of message.toolCalls)
      bytes += Buffer.byteLength(call.name) + Buffer.byteLength(call.argumentsJson);
  }
  for (const tool of conversation.tools) {
    bytes +=
      Buffer.byteLength(tool.name) +
      Buffer.byteLength(tool.description) +
      Buffer.byteLength(tool.parametersJson);
  }
  return fixed + Math.ceil(bytes / BYTES_PER_TOKEN);
}
