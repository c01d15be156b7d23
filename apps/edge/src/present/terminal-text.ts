// Text a node sent (discovery versions, ids, host names, run output), made safe to print on an operator's
// terminal. A node is a remote machine running agents with broad permissions: a version string or an answer can
// carry escape sequences that retitle the window, rewrite what was printed before (cursor moves, `\r`), hide text,
// plant a hyperlink (OSC 8), write the clipboard (OSC 52) or reset the terminal. Every string `iop-edge nodes
// list` and the console print goes through terminalText: ANSI CSI, OSC and the other string sequences (DCS, SOS,
// PM, APC), two-byte ESC sequences, the remaining C0 controls, DEL, C1 controls (the 8-bit forms of the same) and
// Unicode bidi overrides are removed; a tab or newline stays only where the caller's line allows one, otherwise
// it becomes a space. Machine output (`--json`) keeps the data and relies on JSON's own escaping.

/* eslint-disable no-control-regex -- matching control characters is this module's purpose */

export interface TerminalTextOptions {
  /** Keep `\n` (multi-line text); default: replace it with a space. */
  newlines?: boolean;
  /** Keep `\t`; default: replace it with a space (table cells). */
  tabs?: boolean;
}

/**
 * Escape sequences: CSI (`ESC [` / 8-bit 0x9B) with its parameters and final byte; OSC, DCS, SOS, PM and APC
 * strings (`ESC ] P X ^ _` / 0x9D 0x90 0x98 0x9E 0x9F) up to BEL, `ESC \` or 0x9C (or the end of the text, so an
 * unterminated one cannot swallow what is printed next); any other ESC with its intermediates and final byte.
 */
const SEQUENCE =
  /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]?|(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^]*?(?:\u0007|\u001b\\|\u009c|$)|\u001b[\u0020-\u002f]*[\u0030-\u007e]?/g;
/** C0 controls but tab and newline, DEL, C1 controls, and bidi embeddings/overrides/isolates. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
/** Anything either pattern (or a tab/newline) would touch: the common clean string is returned as it is. */
const SUSPECT = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

export function terminalText(text: string, options: TerminalTextOptions = {}): string {
  if (!SUSPECT.test(text)) return text;
  let clean = text.replace(SEQUENCE, '').replace(CONTROL, '');
  if (!options.newlines) clean = clean.replace(/\n/g, ' ');
  if (!options.tabs) clean = clean.replace(/\t/g, ' ');
  return clean;
}
