import { describe, expect, it } from '@jest/globals';
import { findUser, resolveAgentUser } from './agent-user.js';
import { createProcessLauncher, type LaunchSpec, type ProcessLauncher } from './process-launcher.js';
import { cliInstance, collect, request, terminal, testAdapter, texts } from './test-support/cli-test-kit.js';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'iop-node:x:998:998::/var/lib/iop-node:/usr/sbin/nologin',
  'iop-agent:x:997:996:IOP agents:/var/lib/iop-agent:/usr/sbin/nologin',
  '',
].join('\n');

/** Starts processes as the test's own user and records what was asked. */
function recordingLauncher(): { launcher: ProcessLauncher; specs: LaunchSpec[] } {
  const real = createProcessLauncher();
  const specs: LaunchSpec[] = [];
  return {
    specs,
    launcher: {
      launch: (spec) => {
        specs.push(spec);
        const { user: _user, ...asSelf } = spec;
        return real.launch(asSelf);
      },
    },
  };
}

describe('run_as user', () => {
  it('reads uid, gid and HOME from the user database', () => {
    expect(findUser(PASSWD, 'iop-agent')).toEqual({
      name: 'iop-agent',
      uid: 997,
      gid: 996,
      home: '/var/lib/iop-agent',
    });
    expect(findUser(PASSWD, 'iop')).toBeUndefined();
  });

  it('refuses a node that is not root, an unknown user and root itself', () => {
    const asRoot = { readPasswd: () => PASSWD, currentUid: () => 0 };
    expect(resolveAgentUser('', asRoot)).toBeUndefined();
    expect(() => resolveAgentUser('iop-agent', { ...asRoot, currentUid: () => 998 })).toThrow(
      "run_as 'iop-agent' needs the node to run as root (it runs as uid 998)",
    );
    expect(() => resolveAgentUser('nobody-here', asRoot)).toThrow("run_as user 'nobody-here' does not exist");
    expect(() => resolveAgentUser('root', asRoot)).toThrow('it would protect nothing');
  });

  it('starts every CLI process as the run_as user with its HOME, USER and LOGNAME', async () => {
    const { launcher, specs } = recordingLauncher();
    const adapter = testAdapter(
      cliInstance(
        {
          env: {
            command: 'sh',
            args: ['-c', 'printf "%s|%s|%s" "$HOME" "$USER" "$LOGNAME"'],
            mode: 'oneshot',
          },
        },
        { runAs: 'iop-agent' },
      ),
      {
        launcher,
        agentUser: { readPasswd: () => PASSWD, currentUid: () => 0 },
        inheritedEnv: { PATH: process.env['PATH'], HOME: '/root', USER: 'root', LOGNAME: 'root' },
      },
    );
    const parts = await collect(adapter, request('env', 'hello'));
    expect(specs.length).toBeGreaterThan(0);
    expect(specs.every((spec) => spec.user?.uid === 997 && spec.user.gid === 996)).toBe(true);
    expect(texts(parts)).toContain('/var/lib/iop-agent|iop-agent|iop-agent');
    await adapter.close();
  });

  it('fails runs with run_as_unavailable instead of running agents as the node user', async () => {
    const { launcher, specs } = recordingLauncher();
    const adapter = testAdapter(
      cliInstance(
        { env: { command: 'sh', args: ['-c', 'echo hi'], mode: 'oneshot' } },
        { runAs: 'iop-agent' },
      ),
      { launcher, agentUser: { readPasswd: () => PASSWD, currentUid: () => 1000 } },
    );
    const parts = await collect(adapter, request('env', 'hello'));
    expect(terminal(parts)).toMatchObject({ type: 'error', code: 'run_as_unavailable', retryable: false });
    expect(specs).toHaveLength(0);
    await adapter.close();
  });

  it('uses the node default agent user (--agent-user) for instances without run_as, fails closed', async () => {
    const { launcher, specs } = recordingLauncher();
    const instance = cliInstance({ env: { command: 'sh', args: ['-c', 'echo hi'], mode: 'oneshot' } });
    const asRoot = testAdapter(instance, {
      launcher,
      defaultRunAs: 'iop-agent',
      agentUser: { readPasswd: () => PASSWD, currentUid: () => 0 },
    });
    await collect(asRoot, request('env', 'hello'));
    expect(specs.length).toBeGreaterThan(0);
    expect(specs.every((spec) => spec.user?.uid === 997)).toBe(true);
    await asRoot.close();
    const started = specs.length;
    const notRoot = testAdapter(instance, {
      launcher,
      defaultRunAs: 'iop-agent',
      agentUser: { readPasswd: () => PASSWD, currentUid: () => 998 },
    });
    const parts = await collect(notRoot, request('env', 'hello'));
    expect(terminal(parts)).toMatchObject({ type: 'error', code: 'run_as_unavailable' });
    expect(specs).toHaveLength(started);
    await notRoot.close();
  });

  it("refuses a terminal profile under run_as (node-pty would keep the node's groups)", async () => {
    const launched = createProcessLauncher().launch({
      command: 'sh',
      args: ['-c', 'true'],
      cwd: '/',
      env: {},
      terminal: true,
      stdin: 'ignore',
      user: { uid: 997, gid: 996 },
    });
    expect((await launched.exited).spawnError).toContain('run_as cannot start terminal profiles');
  });
});
