// Every shell command in README.md and docs/ runs as written, or names something that exists: the offline edge
// commands (config init, config check, node register, keys create, ...) run against a temporary edge.yaml with the
// CLI built by `make compile`; commands that need a running edge or a server are checked to exist in the CLI's
// help (or the Makefile) and listed as not run, with the reason. A command no rule covers fails the test.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { checkOf, shellCommands } from './doc-commands.js';

const REPO = path.resolve(import.meta.dirname, '../../..');
const EDGE_MAIN = path.join(REPO, 'apps/edge/dist/main.js');
const NODE_MAIN = path.join(REPO, 'apps/node/dist/main.js');
const DOCS = [
  'README.md',
  ...fs
    .readdirSync(path.join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const temps: string[] = [];

afterAll(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
});

function helpOf(main: string): string {
  return execFileSync(process.execPath, [main, '--help'], { encoding: 'utf8' });
}

function makeTargets(): Set<string> {
  const makefile = fs.readFileSync(path.join(REPO, 'Makefile'), 'utf8');
  return new Set([...makefile.matchAll(/^([A-Za-z][\w-]*):/gm)].map((match) => match[1] ?? ''));
}

describe('the shell commands of the README and docs/', () => {
  it('finds commands in every file that has a shell block, with continuation lines joined', () => {
    const commands = shellCommands(
      [
        'text',
        '```bash',
        'make run    # a comment',
        '# only a comment',
        'curl a \\',
        '  -d b',
        '```',
        'iop-edge x',
      ].join('\n'),
      'sample.md',
    );
    expect(commands).toEqual([
      { file: 'sample.md', line: 3, text: 'make run' },
      { file: 'sample.md', line: 5, text: 'curl a -d b' },
    ]);
    expect(checkOf({ file: 'x', line: 1, text: 'iop-edge frobnicate' }, '/tmp')).toEqual({ kind: 'unknown' });
    expect(checkOf({ file: 'x', line: 1, text: 'iop-edge cluster keygen --out /etc/iop/k' }, '/t')).toEqual({
      kind: 'run',
      argv: ['cluster', 'keygen', '--out', '/t/k'],
    });
  });

  it('are each run, found, or skipped for a stated reason', () => {
    const edgeHelp = helpOf(EDGE_MAIN);
    const nodeHelp = helpOf(NODE_MAIN);
    const targets = makeTargets();
    const problems: string[] = [];
    const notRun: string[] = [];
    let ran = 0;
    for (const file of DOCS) {
      const commands = shellCommands(fs.readFileSync(path.join(REPO, file), 'utf8'), file);
      if (commands.length === 0) continue;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-doc-commands-'));
      temps.push(dir);
      const env = { ...process.env, IOP_EDGE_CONFIG: path.join(dir, 'edge.yaml') };
      const runEdge = (argv: readonly string[]) =>
        spawnSync(process.execPath, [EDGE_MAIN, ...argv], {
          cwd: dir,
          env,
          encoding: 'utf8',
          timeout: 30_000,
        });
      // A file whose commands do not make their own edge.yaml starts from a fresh one.
      if (!commands.some((command) => /iop-edge config init/.test(command.text))) {
        const init = runEdge(['config', 'init']);
        if (init.status !== 0) throw new Error(`config init failed: ${init.stderr}`);
      }
      for (const command of commands) {
        const where = `${command.file}:${command.line} \`${command.text}\``;
        const check = checkOf(command, dir);
        switch (check.kind) {
          case 'run': {
            const result = runEdge(check.argv);
            ran += 1;
            if (result.status !== 0)
              problems.push(`${where} exited ${result.status}: ${result.stderr.trim()}`);
            break;
          }
          case 'node-help':
            ran += 1;
            break;
          case 'subcommand': {
            const help = check.cli === 'iop-edge' ? edgeHelp : nodeHelp;
            if (!new RegExp(`^\\s+${check.subcommand}\\b`, 'm').test(help)) {
              problems.push(`${where}: ${check.cli} has no subcommand '${check.subcommand}'`);
            }
            notRun.push(`${where}: ${check.notRun}`);
            break;
          }
          case 'make-target':
            if (!targets.has(check.target))
              problems.push(`${where}: the Makefile has no target '${check.target}'`);
            notRun.push(`${where}: a make target (it exists)`);
            break;
          case 'skip':
            notRun.push(`${where}: ${check.reason}`);
            break;
          case 'unknown':
            problems.push(
              `${where}: no rule says how to check it (packages/architecture/src/doc-commands.ts)`,
            );
            break;
          default: {
            const unreachable: never = check;
            throw new Error(`unknown check ${JSON.stringify(unreachable)}`);
          }
        }
      }
    }
    process.stdout.write(`doc commands: ${ran} run; not run:\n  ${notRun.join('\n  ')}\n`);
    expect(problems).toEqual([]);
    expect(ran).toBeGreaterThan(5);
  }, 300_000);
});
