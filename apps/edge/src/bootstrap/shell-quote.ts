// Quoting of values pasted into shell and PowerShell text (install scripts, one-liners): single-quoted literals
// in both, which expand nothing ($, backticks, globs, ${...}). Control characters are refused: no quoting makes
// a newline safe to paste into a terminal.
import { BootstrapError } from './errors.js';

function refuseControl(value: string, what: string): void {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw new BootstrapError('invalid_value', `${what} contains a control character`);
  }
}

/** A POSIX shell word: 'it'\''s' for it's. */
export function shQuote(value: string, what = 'value'): string {
  refuseControl(value, what);
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A PowerShell verbatim string: 'it''s' for it's (also for the typographic single quotes PowerShell accepts). */
export function psQuote(value: string, what = 'value'): string {
  refuseControl(value, what);
  return `'${value.replace(/['\u2018\u2019\u201a\u201b]/g, (quote) => quote + quote)}'`;
}
