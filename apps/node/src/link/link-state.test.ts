import { describe, expect, it } from '@jest/globals';
import { LinkError } from './link-error.js';
import { LinkStateMachine, type LinkState } from './link-state.js';

function walk(...states: LinkState[]): LinkStateMachine {
  const machine = new LinkStateMachine();
  for (const state of states) machine.transition(state);
  return machine;
}

describe('LinkStateMachine', () => {
  it('starts in connecting', () => {
    expect(new LinkStateMachine().state).toBe('connecting');
  });

  it('allows the documented life: register, lose the link, re-register, close', () => {
    const seen: string[] = [];
    const machine = new LinkStateMachine();
    machine.onChange((next, previous) => seen.push(`${previous}>${next}`));
    for (const state of [
      'registered',
      'reconnecting',
      'registered',
      'reconnecting',
      'closing',
      'closed',
    ] as const) {
      machine.transition(state);
    }
    expect(machine.state).toBe('closed');
    expect(seen).toEqual([
      'connecting>registered',
      'registered>reconnecting',
      'reconnecting>registered',
      'registered>reconnecting',
      'reconnecting>closing',
      'closing>closed',
    ]);
  });

  it.each<[LinkState[], LinkState]>([
    [[], 'reconnecting'],
    [[], 'closed'],
    [[], 'connecting'],
    [['registered'], 'registered'],
    [['registered'], 'connecting'],
    [['registered'], 'closed'],
    [['registered', 'reconnecting'], 'reconnecting'],
    [['registered', 'reconnecting'], 'closed'],
    [['closing'], 'registered'],
    [['closing'], 'closing'],
    [['closing', 'closed'], 'connecting'],
    [['closing', 'closed'], 'closed'],
  ])('after %j refuses → %s with illegal_transition', (path, next) => {
    const machine = walk(...path);
    const before = machine.state;
    expect(machine.canTransition(next)).toBe(false);
    let error: unknown;
    try {
      machine.transition(next);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(LinkError);
    expect((error as LinkError).code).toBe('illegal_transition');
    expect(machine.state).toBe(before);
  });

  it('reaches closing from every live state', () => {
    expect(walk('closing').state).toBe('closing');
    expect(walk('registered', 'closing').state).toBe('closing');
    expect(walk('registered', 'reconnecting', 'closing').state).toBe('closing');
  });
});
