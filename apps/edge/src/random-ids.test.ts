import { describe, expect, it } from '@jest/globals';
import { randomBase64Url, randomHex } from './random-ids.js';

describe('random ids', () => {
  it('gives ids of the asked size that never repeat across pool refills', () => {
    const seen = new Set<string>();
    // 3,000 × 6 bytes spans several refills of the 4 KiB pool.
    for (let index = 0; index < 3000; index += 1) {
      const id = randomHex(6);
      expect(id).toMatch(/^[0-9a-f]{12}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(3000);
    expect(randomBase64Url(12)).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it('rejects sizes the pool cannot serve', () => {
    expect(() => randomHex(0)).toThrow(RangeError);
    expect(() => randomHex(5000)).toThrow(RangeError);
  });
});
