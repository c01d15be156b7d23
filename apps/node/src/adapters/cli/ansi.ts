// Removes terminal control sequences from pty output so a TUI's text can be streamed as plain lines.
// Covers CSI (colors, cursor moves, private modes), OSC (titles, hyperlinks), two-byte escapes and other C0
// controls except tab.
/* eslint-disable no-control-regex -- matching control characters is the point of this module */
const ANSI_PATTERN =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[PX^_][^\u001b]*\u001b\\|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;
const CONTROL_PATTERN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
/* eslint-enable no-control-regex */

export function stripAnsi(text: string): string {
  return text.replace(ANSI_PATTERN, '').replace(CONTROL_PATTERN, '');
}
