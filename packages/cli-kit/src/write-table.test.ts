import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { writeTable } from './write-table.js';

describe('writeTable', () => {
  it('pads every column to its widest cell and trims the line ends', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString()));
    writeTable(
      out,
      ['NODE', 'STATUS'],
      [
        ['gpu-01', 'ready'],
        ['n2', ''],
      ],
    );
    expect(text).toBe('NODE    STATUS\ngpu-01  ready\nn2\n');
  });
});
