import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { createLogger, REDACTED_KEYS } from './create-logger.js';
import { silentLogger } from './logger.js';

/** A destination that keeps every written line. */
function capture(): { stream: Writable; text: () => string; lines: () => Record<string, unknown>[] } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  return {
    stream,
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const SECRETS = {
  token: 'iop_node_token_5c1e9a',
  apiKey: 'sk-api-key-77b2f0',
  apiKeySnake: 'sk-snake-key-0d3e41',
  bearer: 'Bearer hdr-secret-9a8b7c',
  bearerLower: 'Bearer lower-secret-1f2e3d',
  bearerToken: 'a2a-bearer-6d5c4b',
  adminToken: 'admin-token-3a2b1c',
  password: 'hunter2-password-e5f6',
};

function logEverySecret(format: 'json' | 'pretty'): string {
  const out = capture();
  const logger = createLogger({ level: 'debug', format, destination: out.stream });
  logger.info({ token: SECRETS.token, node: 'n1' }, 'node registered');
  logger.warn({ provider: { api_key: SECRETS.apiKeySnake, apiKey: SECRETS.apiKey } }, 'provider configured');
  logger.debug(
    {
      request: {
        headers: { Authorization: SECRETS.bearer, authorization: SECRETS.bearerLower, accept: 'text/plain' },
      },
    },
    'upstream request',
  );
  logger.error(
    { a2a: { bearer_token: SECRETS.bearerToken }, refresh: { admin_token: SECRETS.adminToken } },
    'x',
  );
  logger.child({ component: 'auth' }).info({ password: SECRETS.password }, 'login');
  return out.text();
}

describe('createLogger', () => {
  it.each(['json', 'pretty'] as const)(
    'never prints tokens, api keys or authorization headers (%s)',
    (format) => {
      const text = logEverySecret(format);
      for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret.replace(/^Bearer /, ''));
      expect(text).toContain('[redacted]');
      // Fields that are not secret survive, so redaction does not simply blank the line.
      expect(text).toContain('text/plain');
      expect(text).toContain('n1');
    },
  );

  it('replaces each secret field in place and keeps the rest of the entry', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', format: 'json', destination: out.stream });
    logger.info({ node: 'n1', token: SECRETS.token, headers: { authorization: SECRETS.bearer } }, 'hello');
    expect(out.lines()).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'hello',
        node: 'n1',
        token: '[redacted]',
        headers: { authorization: '[redacted]' },
      }),
    ]);
  });

  it('covers every listed key at the top level and one and two levels down', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', format: 'json', destination: out.stream });
    for (const key of REDACTED_KEYS) {
      logger.info({ [key]: 's1', outer: { [key]: 's2', inner: { [key]: 's3' } } }, key);
    }
    const lines = out.lines();
    expect(lines).toHaveLength(REDACTED_KEYS.length);
    for (const line of lines) {
      const key = String(line.msg);
      expect(line[key]).toBe('[redacted]');
      expect(line.outer).toEqual({ [key]: '[redacted]', inner: { [key]: '[redacted]' } });
    }
  });

  it('drops entries below the configured level and carries child bindings', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', format: 'json', destination: out.stream });
    logger.debug({}, 'hidden');
    logger.child({ component: 'pool' }).info({ queued: 2 }, 'shown');
    expect(out.lines()).toEqual([expect.objectContaining({ msg: 'shown', component: 'pool', queued: 2 })]);
    expect(out.text()).not.toContain('hidden');
  });

  it('pretty format writes one readable line per entry with time, level, message and fields', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', format: 'pretty', destination: out.stream });
    logger.warn({ node: 'n1', detail: { code: 7 } }, 'slow heartbeat');
    expect(out.text()).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARN slow heartbeat node=n1 detail=\{"code":7\}\n$/,
    );
  });
});

describe('silentLogger', () => {
  it('accepts every call and its children are silent too', () => {
    expect(silentLogger.child({ component: 'x' })).toBe(silentLogger);
    expect(() => silentLogger.error({ token: SECRETS.token }, 'dropped')).not.toThrow();
  });
});
