import { describe, expect, it } from '@jest/globals';
import { terminalText } from './terminal-text.js';

const ESC = '\u001b';

describe('terminalText', () => {
  it('returns clean text unchanged', () => {
    expect(terminalText('codex 0.34.0 (ünïcode, 日本)')).toBe('codex 0.34.0 (ünïcode, 日本)');
  });

  it('removes CSI sequences: colours, cursor moves, erase, 8-bit CSI', () => {
    expect(terminalText(`${ESC}[31mred${ESC}[0m`)).toBe('red');
    expect(terminalText(`ok${ESC}[2K${ESC}[1A${ESC}[?25l!`)).toBe('ok!');
    expect(terminalText('a\u009b2Jb')).toBe('ab');
    expect(terminalText(`tail${ESC}[12;`)).toBe('tail');
  });

  it('removes OSC title, hyperlink and clipboard strings with either terminator, and unterminated ones', () => {
    expect(terminalText(`${ESC}]0;pwned${ESC}\\v1`)).toBe('v1');
    expect(terminalText(`${ESC}]8;;http://evil.example/\u0007click${ESC}]8;;\u0007`)).toBe('click');
    expect(terminalText(`x${ESC}]52;c;ZWNobyBoaQ==\u0007y`)).toBe('xy');
    expect(terminalText(`v2\u009d0;t\u009c`)).toBe('v2');
    expect(terminalText(`v3${ESC}]0;never ends`)).toBe('v3');
    expect(terminalText(`${ESC}P1$r${ESC}\\ok`)).toBe('ok');
  });

  it('removes other ESC sequences, C0 and C1 controls, DEL and bidi overrides', () => {
    expect(terminalText(`${ESC}creset`)).toBe('reset');
    expect(terminalText(`${ESC}(0line`)).toBe('line');
    expect(terminalText('over\rwrite\u0008\u0007\u0000\u007f\u0085end')).toBe('overwriteend');
    expect(terminalText('id\u202eexe.txt\u2066')).toBe('idexe.txt');
  });

  it('turns tabs and newlines into spaces on a line, and keeps them where the caller allows', () => {
    expect(terminalText('a\tb\nc')).toBe('a b c');
    expect(terminalText('a\tb\nc', { tabs: true })).toBe('a\tb c');
    expect(terminalText(`a\tb\n${ESC}[1mc`, { tabs: true, newlines: true })).toBe('a\tb\nc');
  });
});
