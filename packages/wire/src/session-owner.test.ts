import { describe, expect, it } from '@jest/globals';
import { principalDigest, principalSessionId, sessionOwner } from './session-owner.js';

describe('principalSessionId', () => {
  it('leaves anonymous session ids as they are', () => {
    expect(principalSessionId('openai', undefined)).toBe('openai');
    expect(principalSessionId('a2a-ctx-1', '')).toBe('a2a-ctx-1');
  });

  it("keeps key ids that share a prefix apart whatever the surface's part is", () => {
    // The old A2A spelling `a2a-${key}-${context}` made these two pairs one session.
    const team = principalSessionId('a2a-a-x', 'team');
    const teamA = principalSessionId('a2a-x', 'team-a');
    expect(team).not.toBe(teamA);
    expect(team).toMatch(/^k[0-9a-f]{24}\.a2a-a-x$/);
    expect(principalSessionId('s', 'team')).not.toBe(principalSessionId('s', 'team-a'));
    expect(principalSessionId('s', 'team')).toBe(principalSessionId('s', 'team'));
  });

  it('stays in the node session id alphabet and never carries the raw key id', () => {
    const id = principalSessionId('openai-2', 'Team A/ü');
    expect(id).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(id).not.toContain('Team');
    expect(principalDigest('x')).toHaveLength(24);
  });
});

describe('sessionOwner', () => {
  it("reads back the principal digest of a keyed session, '' for an anonymous one", () => {
    expect(sessionOwner(principalSessionId('openai-2', 'team'))).toBe(principalDigest('team'));
    expect(sessionOwner('openai')).toBe('');
    expect(sessionOwner('k0123.openai')).toBe('');
  });
});
