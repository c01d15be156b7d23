import { describe, expect, it } from '@jest/globals';
import { testPrincipal } from './test-support/test-principal.js';
import { fromWirePrincipal, toWirePrincipal, type WirePrincipal } from './wire-principal.js';

describe('wire principal', () => {
  it('carries the key’s fair share to the owner edge, which queues the run under it', () => {
    const principal = testPrincipal({ id: 'bulk', weight: 7, priority: 'batch', rpm: 5 });
    const back = fromWirePrincipal(JSON.parse(JSON.stringify(toWirePrincipal(principal))) as WirePrincipal);
    expect(back).toMatchObject({ id: 'bulk', weight: 7, priority: 'batch', rpm: 5 });
  });

  it('applies the defaults for a peer that sends no (or a bad) weight and priority', () => {
    const wire: WirePrincipal = {
      id: 'old',
      models: null,
      rpm: null,
      tpm: null,
      maxConcurrent: null,
      tokenBudget: null,
    };
    expect(fromWirePrincipal(wire)).toMatchObject({ weight: 1, priority: 'interactive' });
    const bad = { ...wire, weight: 5000, priority: 'urgent' } as unknown as WirePrincipal;
    expect(fromWirePrincipal(bad)).toMatchObject({ weight: 1, priority: 'interactive' });
    expect(fromWirePrincipal({ ...wire, weight: 2.5 })).toMatchObject({ weight: 1 });
  });
});
