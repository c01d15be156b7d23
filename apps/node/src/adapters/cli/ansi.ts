// Turns one line of pseudo-terminal output into plain text so a TUI's answer can be streamed as lines. TUIs
// position words with cursor moves instead of spaces: cursor-horizontal-absolute (`ESC[nG`) pads the line to
// column n and cursor-forward (`ESC[nC`) inserts n spaces. Every other control sequence is removed: CSI (colors,
// other cursor moves, private modes), OSC (titles, hyperlinks), DCS/PM/APC strings, charset designations
// (`ESC(B`), save/restore cursor (`ESC7`/`ESC8`), other two-byte escapes and C0 controls except tab.
// Apply it per line: columns count from the start of the text given.
/* eslint-disable no-control-regex -- matching control characters is the point of this module */
const TOKEN =
  /\u001b\[(\d*)G|\u001b\[(\d*)C|\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[PX^_][^\u001b]*\u001b\\|\u001b[()*+][0-~]|\u001b[0-9=>]|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;
const CONTROL_PATTERN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
/* eslint-enable no-control-regex */
const MAX_PAD = 300;

export function stripAnsi(text: string): string {
  let output = '';
  let last = 0;
  for (const match of text.matchAll(TOKEN)) {
    output += text.slice(last, match.index).replace(CONTROL_PATTERN, '');
    last = match.index + match[0].length;
    const [, column, forward] = match;
    if (column !== undefined) {
      const target = Math.max(1, Number(column || '1')) - 1;
      if (output.length < target) output += ' '.repeat(Math.min(target - output.length, MAX_PAD));
    } else if (forward !== undefined) {
      output += ' '.repeat(Math.min(Number(forward || '1'), MAX_PAD));
    }
  }
  return output + text.slice(last).replace(CONTROL_PATTERN, '');
}
