import { describe, expect, it } from '@jest/globals';
import { requireTool, RequiredToolMissingError } from './required-tool.js';

describe('requireTool', () => {
  it('lets a suite run when its tool is present, whatever CI says', () => {
    expect(
      requireTool('nats-server', true, 'cluster tests', 'apt-get install nats-server', {
        env: { CI: 'true' },
      }),
    ).toBe(true);
  });

  it('skips with one line naming the tool when it is missing outside CI', () => {
    const lines: string[] = [];
    const run = requireTool('chromium', false, 'browser tests', 'apt-get install chromium', {
      env: {},
      write: (line) => lines.push(line),
    });
    expect(run).toBe(false);
    expect(lines).toEqual(['skipping browser tests: chromium is missing (apt-get install chromium)\n']);
  });

  it('fails naming the tool when it is missing under CI=true', () => {
    const lines: string[] = [];
    const ask = () =>
      requireTool('nats-server', false, 'cluster tests', 'bash .ci/run installs it', {
        env: { CI: 'true' },
        write: (line) => lines.push(line),
      });
    expect(ask).toThrow(RequiredToolMissingError);
    expect(ask).toThrow(/cluster tests needs nats-server, which is missing/);
    expect(lines).toEqual([]);
  });
});
