import { describe, expect, it } from '@jest/globals';
import { createRunSecrets } from './run-secrets.js';

describe('run secrets', () => {
  it('makes one secret per run that only that run verifies', () => {
    const secrets = createRunSecrets();
    const first = secrets.issue('run-1');
    expect(first).toMatch(/^iop-run-[A-Za-z0-9_-]{43}$/);
    expect(secrets.issue('run-1')).toBe(first);
    expect(secrets.verify('run-1', first)).toBe(true);
    expect(secrets.verify('run-2', first)).toBe(false);
    expect(secrets.verify('run-1', `${first}x`)).toBe(false);
    expect(secrets.verify('run-1', '')).toBe(false);
  });

  it('is not forgeable without the process key: another edge process refuses it', () => {
    const secret = createRunSecrets().issue('run-1');
    expect(createRunSecrets().verify('run-1', secret)).toBe(false);
  });
});
