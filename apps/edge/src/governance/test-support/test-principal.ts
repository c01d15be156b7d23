import { principalOf, type Principal } from '../principal.js';

/** The principal of API key `team-a` with no limits, with the given key fields changed. */
export function testPrincipal(overrides: Partial<Parameters<typeof principalOf>[0]> = {}): Principal {
  return principalOf({
    id: 'team-a',
    key: 'sk',
    key_sha256: '',
    models: [],
    rpm: null,
    tpm: null,
    max_concurrent: null,
    token_budget: null,
    weight: 1,
    priority: 'interactive',
    ...overrides,
  });
}
