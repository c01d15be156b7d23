// What a CLI is asked: the content of the last user message of the request (a CLI keeps its own history, so
// earlier messages are not replayed). Persistent CLIs read one line per prompt, so line breaks become spaces.
import type { ChatMessage } from '@iop/wire';

export function lastUserPrompt(messages: readonly ChatMessage[]): string | undefined {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role === 'user') return message.content;
  }
  return undefined;
}

export function toSingleLine(prompt: string): string {
  return prompt.replace(/\r\n|\r|\n/g, ' ');
}
