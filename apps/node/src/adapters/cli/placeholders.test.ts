import { describe, expect, it } from '@jest/globals';
import { CliAdapterError } from './errors.js';
import { expandArgs, SESSION_ID_PATTERN } from './placeholders.js';

const values = {
  prompt: '--add-dir /',
  backendSessionId: 'thread-1',
  iopSession: 'ctx-1',
  workspace: '/work',
  runId: 'run-1',
};

describe('expandArgs', () => {
  it('puts a positional {prompt} after an inserted -- so a prompt starting with - stays text', () => {
    expect(expandArgs(['exec', '--json', '{prompt}'], values)).toEqual([
      'exec',
      '--json',
      '--',
      '--add-dir /',
    ]);
    expect(
      expandArgs(['exec', 'resume', '{thread_id}', '{prompt}'], { ...values, prompt: '-c x=1' }),
    ).toEqual(['exec', 'resume', 'thread-1', '--', '-c x=1']);
  });

  it('keeps a -- the template already has and inserts no second one', () => {
    expect(expandArgs(['--print', '--', '{prompt}'], values)).toEqual(['--print', '--', '--add-dir /']);
  });

  it('leaves a prompt embedded in a larger argument alone (it cannot become a separate option)', () => {
    expect(expandArgs(['--message={prompt}'], values)).toEqual(['--message=--add-dir /']);
  });

  it('substitutes the other placeholders without inserting anything', () => {
    expect(
      expandArgs(['--resume', '{session_id}', '--cwd', '{workspace}', '--run', '{run_id}'], values),
    ).toEqual(['--resume', 'thread-1', '--cwd', '/work', '--run', 'run-1']);
  });

  it('refuses an {iop_session} that is not 1-128 of [A-Za-z0-9._-]', () => {
    for (const bad of ['', '--add-dir=/', 'a b', 'x'.repeat(129), 'ctx/../..', 'ctx\n']) {
      expect(() => expandArgs(['--session', '{iop_session}'], { ...values, iopSession: bad })).toThrow(
        CliAdapterError,
      );
    }
    expect(() => expandArgs(['--session', '{iop_session}'], { ...values, iopSession: '-c x=1' })).toThrow(
      /cannot be passed to the CLI/,
    );
    expect(expandArgs(['--session', '{iop_session}'], { ...values, iopSession: 'a2a.ctx_1-x' })).toEqual([
      '--session',
      'a2a.ctx_1-x',
    ]);
    // Not validated when the template does not use it (other session ids never reach argv).
    expect(expandArgs(['{prompt}'], { ...values, iopSession: 'a b' })).toEqual(['--', '--add-dir /']);
    expect(SESSION_ID_PATTERN.test('x'.repeat(128))).toBe(true);
  });
});
