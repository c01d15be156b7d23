import { describe, expect, it } from '@jest/globals';
import { LineSplitter, LineTooLongError } from './line-splitter.js';

describe('LineSplitter', () => {
  it('splits on \\n, \\r\\n and lone \\r, across chunk boundaries', () => {
    const splitter = new LineSplitter();
    expect(splitter.push('a\nb\r\nc\rd')).toEqual(['a', 'b', 'c']);
    expect(splitter.push('e\r')).toEqual(['de']);
    expect(splitter.push('\nf')).toEqual([]);
    expect(splitter.push('g\n\n')).toEqual(['fg', '']);
    expect(splitter.flush()).toBeUndefined();
    expect(splitter.push('tail')).toEqual([]);
    expect(splitter.flush()).toBe('tail');
  });

  it('scans each chunk once: a 4 MiB line in 1 KiB chunks takes linear time', () => {
    const splitter = new LineSplitter();
    const chunk = 'x'.repeat(1024);
    const started = performance.now();
    for (let index = 0; index < 4096; index += 1) expect(splitter.push(chunk)).toEqual([]);
    const lines = splitter.push('\n');
    const elapsed = performance.now() - started;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toHaveLength(4 * 1024 * 1024);
    // Rescanning the pending line on every chunk would be ~8·10^9 character visits here.
    expect(elapsed).toBeLessThan(1000);
  });

  it('throws LineTooLongError once the unterminated line exceeds the limit, then starts afresh', () => {
    const splitter = new LineSplitter(10);
    expect(splitter.push('12345')).toEqual([]);
    expect(() => splitter.push('678901')).toThrow(LineTooLongError);
    expect(splitter.push('ok\n')).toEqual(['ok']);
  });
});
