#!/usr/bin/env node
// The edge → node leg of the real-CLI e2e smoke (scripts/e2e-smoke.sh): a real `iop-edge console` and a real
// `iop-node run` on loopback, the node's cli adapter holding one real CLI profile (JSON from
// real-cli-smoke.js --print-profile), the console driven through stdin: two prompts in one IOP session (the
// second must see the first when the CLI can continue), /sessions, /terminate-session, then no CLI process may
// be left. Prints PASS/FAIL lines; exits non-zero on a failure. Needs the built apps.
//
//   e2e-edge-console.mjs --repo DIR --profile-name NAME --profile-json FILE --scratch DIR --clis DIR [--no-history]
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, option } from './e2e-script-support.mjs';

const repo = path.resolve(option('--repo'));
const profileName = option('--profile-name');
const profile = JSON.parse(readFileSync(option('--profile-json'), 'utf8'));
const scratch = path.resolve(option('--scratch'));
const clisDir = path.resolve(option('--clis'));
const expectHistory = !process.argv.slice(2).includes('--no-history');
const YAML = createRequire(path.join(repo, 'packages/config/package.json'))('yaml');
const edgeMain = path.join(repo, 'apps/edge/dist/main.js');
const nodeMain = path.join(repo, 'apps/node/dist/main.js');

const snake = (key) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

// The example config with free ports, a private data dir, and the CLI profile on test-node's cli adapter.
mkdirSync(scratch, { recursive: true });
const config = YAML.parse(readFileSync(path.join(repo, 'configs/edge.yaml'), 'utf8'));
for (const section of [
  config.edge,
  config.metrics,
  config.refresh,
  config.bootstrap,
  config.openai,
  config.a2a,
]) {
  if (section?.listen) section.listen = `127.0.0.1:${await freePort()}`;
}
config.edge.data_dir = path.join(scratch, 'edge-data');
config.bootstrap.artifact_dir = path.join(scratch, 'artifacts');
config.console = { ...config.console, target: profileName, session_id: 'e2e' };
const node = config.nodes.find((entry) => entry.id === 'test-node');
node.adapters.cli.profiles[profileName] = Object.fromEntries(
  Object.entries(profile).map(([key, value]) => [snake(key), value]),
);
const configPath = path.join(scratch, 'edge.yaml');
writeFileSync(configPath, YAML.stringify(config));

const registered = JSON.parse(
  (
    await promisify(execFile)(process.execPath, [
      edgeMain,
      'node',
      'register',
      'test-node',
      '--config',
      configPath,
      '--json',
    ])
  ).stdout,
);
const tokenFile = path.join(scratch, 'test-node.token');
writeFileSync(tokenFile, `${registered.token}\n`, { mode: 0o600 });

let output = '';
const edge = spawn(process.execPath, [edgeMain, 'console', '--config', configPath], {
  cwd: repo,
  stdio: ['pipe', 'pipe', 'pipe'],
});
edge.stdout.on('data', (chunk) => (output += chunk));
let edgeLog = '';
edge.stderr.on('data', (chunk) => (edgeLog = (edgeLog + chunk).slice(-20000)));
// The node exits when its very first connection fails: start it once the edge listens (banner printed).
for (let waited = 0; !output.includes('/exit to leave') && waited < 30_000; waited += 100) {
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const nodeAgent = spawn(
  process.execPath,
  [
    nodeMain,
    'run',
    '--edge',
    registered.edge_address ?? config.edge.listen,
    '--node-id',
    'test-node',
    '--token-file',
    tokenFile,
    '--data-dir',
    path.join(scratch, 'node-data'),
  ],
  { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] },
);
let nodeLog = '';
nodeAgent.stderr.on('data', (chunk) => (nodeLog = (nodeLog + chunk).slice(-20000)));

const failures = [];
const step = (name, ok, detail) => {
  process.stdout.write(`${ok ? 'PASS' : 'FAIL'} edge→node ${name}: ${detail}\n`);
  if (!ok) failures.push(name);
};
const waitFor = async (predicate, timeoutMs) => {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
};
const count = (pattern) => output.split('\n').filter((line) => pattern.test(line)).length;
const send = (line) => edge.stdin.write(`${line}\n`);
const cliProcesses = () => {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (
        commandLine.includes(clisDir) &&
        !commandLine.includes('e2e-edge-console') &&
        !commandLine.includes('real-cli-smoke') &&
        state !== 'Z'
      ) {
        found.push(`${entry} ${commandLine.slice(0, 100)}`);
      }
    } catch {}
  }
  return found;
};

try {
  step(
    'node connected',
    await waitFor(() => /connected node=test-node/.test(output), 30_000),
    'console saw the node',
  );
  send('Convert token iop_edge_one and reply only with it');
  const first = await waitFor(() => count(/\b(complete|error|cancelled) run_id=/) >= 1, 200_000);
  step(
    'first prompt',
    first && /IOP_EDGE_ONE_OK/.test(output) && count(/ complete run_id=/) === 1,
    output
      .split('\n')
      .filter((line) => /IOP_EDGE_ONE|run_id=/.test(line))
      .join(' | '),
  );
  send('Now convert iop_edge_two');
  const second = await waitFor(() => count(/\b(complete|error|cancelled) run_id=/) >= 2, 200_000);
  const historyOk = !expectHistory || /history: IOP_EDGE_ONE/.test(output);
  step(
    expectHistory ? 'second prompt sees the first' : 'second prompt (CLI without continuation)',
    second && /IOP_EDGE_TWO_OK/.test(output) && historyOk && count(/ complete run_id=/) === 2,
    output
      .split('\n')
      .filter((line) => /IOP_EDGE_TWO|history/.test(line))
      .join(' | '),
  );
  send('/sessions');
  step(
    'sessions',
    await waitFor(
      () => new RegExp(`target=${profileName} session=e2e`).test(output.split('/sessions')[1] ?? ''),
      20_000,
    ),
    (output.split('edge> /sessions')[1] ?? '').split('edge>')[0]?.trim().replace(/\n/g, ' | ') ?? '',
  );
  send('/terminate-session');
  const terminated = await waitFor(() => /terminated session e2e/.test(output), 20_000);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const left = cliProcesses();
  step(
    'terminate-session leaves no CLI process',
    terminated && left.length === 0,
    left.join('; ') || 'none left',
  );
  send('/exit');
  await waitFor(() => edge.exitCode !== null, 10_000);
} finally {
  for (const child of [nodeAgent, edge]) if (child.exitCode === null) child.kill('SIGTERM');
  writeFileSync(path.join(scratch, 'console.out'), output);
  writeFileSync(path.join(scratch, 'edge.log'), edgeLog);
  writeFileSync(path.join(scratch, 'node.log'), nodeLog);
}
process.stdout.write(
  failures.length
    ? `edge→node ${profileName}: failed: ${failures.join(', ')} (logs in ${scratch})\n`
    : `edge→node ${profileName}: all steps passed\n`,
);
process.exit(failures.length ? 1 : 0);
