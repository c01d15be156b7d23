import { describe, expect, it } from '@jest/globals';
import { CliAdapterError } from './errors.js';
import { expandArgs, expandEnv, SESSION_ID_PATTERN } from './placeholders.js';

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

describe('model endpoint placeholders (fabric_model)', () => {
  const model = {
    modelBaseUrl: 'http://127.0.0.1:4242/v1',
    anthropicBaseUrl: 'http://127.0.0.1:4242',
    apiKey: 'iop-run-abc',
    model: 'local',
  };

  it('fills the endpoint, key and model in args when the run has an endpoint', () => {
    expect(
      expandArgs(['-c', 'base_url="{model_base_url}"', '--key', '{model_api_key}', '-m', '{model}'], {
        ...values,
        model,
      }),
    ).toEqual(['-c', 'base_url="http://127.0.0.1:4242/v1"', '--key', 'iop-run-abc', '-m', 'local']);
  });

  it('leaves them as written in a run without an endpoint', () => {
    expect(expandArgs(['{model_base_url}', '{model}'], values)).toEqual(['{model_base_url}', '{model}']);
  });

  it('fills env values (only the model placeholders)', () => {
    expect(
      expandEnv(
        {
          ANTHROPIC_BASE_URL: '{anthropic_base_url}',
          ANTHROPIC_AUTH_TOKEN: '{model_api_key}',
          X: '{prompt}',
        },
        model,
      ),
    ).toEqual({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4242',
      ANTHROPIC_AUTH_TOKEN: 'iop-run-abc',
      X: '{prompt}',
    });
    expect(expandEnv({ A: '{model}' }, undefined)).toEqual({ A: '{model}' });
  });
});
