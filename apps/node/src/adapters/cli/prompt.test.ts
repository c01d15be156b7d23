import { describe, expect, it } from '@jest/globals';
import { toTerminalText } from './prompt.js';

describe('toTerminalText', () => {
  it('removes C0/C1 control characters and DEL and joins lines', () => {
    expect(toTerminalText('run\u001b[201~ this\u0003\u0004 now\u007f\u009b')).toBe('run[201~ this now');
    expect(toTerminalText('one\r\ntwo\tthree\nfour')).toBe('one two three four');
    expect(toTerminalText('plain ünïcödé ✓')).toBe('plain ünïcödé ✓');
  });
});
