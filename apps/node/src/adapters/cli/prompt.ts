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

/**
 * Text safe to type into a pseudo-terminal: one line, and no C0/C1 control characters or DEL (an escape sequence
 * or a Ctrl-key in a prompt would drive the terminal program instead of being read as text).
 */
export function toTerminalText(prompt: string): string {
  return toSingleLine(prompt).replace(/\t/g, ' ').replace(CONTROL_CHARACTERS, '');
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;
