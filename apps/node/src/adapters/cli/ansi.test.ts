import { describe, expect, it } from '@jest/globals';
import { stripAnsi } from './ansi.js';

describe('stripAnsi', () => {
  it('removes colors, titles, charset and cursor save/restore sequences', () => {
    expect(stripAnsi('\u001b[1;32mOK\u001b[0m \u001b]0;title\u0007done\u001b(B\u001b7\u001b8')).toBe(
      'OK done',
    );
  });

  it('turns cursor-forward moves into spaces (TUIs use them instead of spaces)', () => {
    expect(stripAnsi('Welcome\u001b[1Cto\u001b[3CClaude\u001b[CCode')).toBe('Welcome to   Claude Code');
  });

  it('pads to the column of cursor-horizontal-absolute moves', () => {
    expect(stripAnsi('\u001b[38;5;174mWelcome\u001b[9Gto\u001b[12GClaude\u001b[19GCode')).toBe(
      'Welcome to Claude Code',
    );
  });

  it('keeps tabs and plain text', () => {
    expect(stripAnsi('a\tb')).toBe('a\tb');
  });
});
