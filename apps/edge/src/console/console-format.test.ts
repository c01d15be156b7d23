import { describe, expect, it } from '@jest/globals';
import { formatResultMap, formatSessions, quote } from './console-format.js';
import { NodeLabels } from '../present/node-labels.js';
import { TextLineAssembler } from './text-line-assembler.js';

describe('console formatting', () => {
  it('prints result maps in byte-sorted key order with a two-space indent', () => {
    expect(formatResultMap({ targets: 'a,b', Zed: '1', adapter: 'cli', max_concurrency: '4' })).toEqual([
      '  Zed = 1',
      '  adapter = cli',
      '  max_concurrency = 4',
      '  targets = a,b',
    ]);
  });

  it('groups session.N keys into rows ordered by number, accepting session_id', () => {
    const result: Record<string, string> = { sessions: '11' };
    for (const index of [10, 2]) {
      result[`session.${index}.mode`] = 'persistent';
      result[`session.${index}.target`] = 'codex';
      result[`session.${index}.session_id`] = `s${index}`;
      result[`session.${index}.pid`] = '42';
    }
    expect(formatSessions(result)).toEqual([
      '  sessions: 11',
      '  [2] mode=persistent target=codex session=s2',
      '  [10] mode=persistent target=codex session=s10',
    ]);
  });

  it('counts the session rows when no sessions key is given, and handles zero sessions', () => {
    expect(
      formatSessions({ 'session.0.mode': 'oneshot', 'session.0.target': 't', 'session.0.session': 'x' }),
    ).toEqual(['  sessions: 1', '  [0] mode=oneshot target=t session=x']);
    expect(formatSessions({ sessions: '0' })).toEqual(['  sessions: 0']);
  });

  it('falls back to the sorted listing without structured keys', () => {
    expect(formatSessions({ zeta: '1', alpha: '2', sessions: '3' })).toEqual([
      '  alpha = 2',
      '  sessions = 3',
      '  zeta = 1',
    ]);
  });

  it('quotes values with JSON escaping', () => {
    expect(quote('idle-timeout')).toBe('"idle-timeout"');
    expect(quote('say "hi"\n')).toBe('"say \\"hi\\"\\n"');
  });
});

describe('TextLineAssembler', () => {
  it('assembles split deltas into lines and flushes the remainder', () => {
    const assembler = new TextLineAssembler();
    expect(assembler.push('AB')).toEqual([]);
    expect(assembler.push('C\r\nDE\n\nF')).toEqual(['ABC', 'DE', '']);
    expect(assembler.flush()).toEqual(['F']);
    expect(assembler.flush()).toEqual([]);
  });
});

describe('NodeLabels', () => {
  it('numbers nodes in first-seen order and never reuses a label', () => {
    const labels = new NodeLabels();
    expect(labels.labelFor('b')).toBe('node0');
    expect(labels.labelFor('a')).toBe('node1');
    expect(labels.labelFor('b')).toBe('node0');
    expect(labels.indexOf('a')).toBe(1);
    expect(labels.indexOf('zzz')).toBeUndefined();
  });
});
