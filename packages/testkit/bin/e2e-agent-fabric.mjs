#!/usr/bin/env node
// The agents-on-the-fabric e2e profiles (issue 42; scripts/e2e-smoke.sh, `make test-e2e
// IOP_E2E_PROFILE=opencode-fabric|codex-fabric`): a real CLI in its shipped `-fabric` profile (taken from
// configs/edge.yaml, `fabric_model` pointed at the pool model below) on a real `iop-node run`, behind a real
// `iop-edge serve`. The pool model `fabric-pool` is served by the node's openai_compat adapter from the loopback
// agent model server (packages/testkit/src/agent-model-server). The CLI gets no model server of its own: only the
// run's node-loopback endpoint, whose calls travel over the node's link into the edge's OpenAI surface as child
// runs of the agent run. Through the edge's OpenAI API (`model` = the CLI route):
//   1. two turns of one session: the answers (<TOKEN>_OK) are the model server's, and the second carries the
//      first (`history: …`, the CLI resumed its conversation);
//   2. the model server saw the CLI's calls (through the node's adapter), the edge counted completed child runs
//      (`iop_child_runs_total`), nothing is left in flight and no CLI process is left.
// Prints PASS/FAIL lines; exits non-zero on a failure. Needs the built apps (`make test-e2e` builds first).
//
//   e2e-agent-fabric.mjs --repo DIR --profile-name NAME --clis DIR --model-url URL --model-log FILE --scratch DIR
// (FILE: the agent model server's --verbose output)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { freePort, option } from './e2e-script-support.mjs';

const repo = path.resolve(option('--repo'));
const profileName = option('--profile-name');
const clisDir = path.resolve(option('--clis'));
const modelUrl = option('--model-url').replace(/\/$/, '');
const scratch = path.resolve(option('--scratch'));
const modelLogPath = path.resolve(option('--model-log'));
const YAML = createRequire(path.join(repo, 'packages/config/package.json'))('yaml');
const edgeMain = path.join(repo, 'apps/edge/dist/main.js');
const nodeMain = path.join(repo, 'apps/node/dist/main.js');
const POOL_MODEL = 'fabric-pool';
const NODE_ID = 'fabric-e2e-node';
const TURN_TIMEOUT_MS = 180_000;

// The shipped profile, as an operator gets it from configs/edge.yaml, with fabric_model set to this pool model.
const shipped = YAML.parse(readFileSync(path.join(repo, 'configs/edge.yaml'), 'utf8'));
const shippedProfile = shipped.nodes
  .flatMap((node) => node.adapters?.instances ?? [])
  .map((instance) => instance.profiles?.[profileName])
  .find((profile) => profile !== undefined);
if (!shippedProfile) throw new Error(`configs/edge.yaml has no profile ${profileName}`);

mkdirSync(scratch, { recursive: true });
const apiKey = `sk-e2e-${randomBytes(12).toString('hex')}`;
const nodeToken = `iop_e2e_fabric_${randomBytes(12).toString('hex')}`;
const ports = {
  transport: await freePort(),
  openai: await freePort(),
  metrics: await freePort(),
  admin: await freePort(),
  bootstrap: await freePort(),
};
// JSON is valid YAML.
const config = {
  edge: {
    id: 'edge-agent-fabric',
    listen: `127.0.0.1:${ports.transport}`,
    data_dir: path.join(scratch, 'edge'),
  },
  logging: { level: 'info', format: 'json' },
  metrics: { enabled: true, listen: `127.0.0.1:${ports.metrics}` },
  refresh: { enabled: true, listen: `127.0.0.1:${ports.admin}` },
  bootstrap: { listen: `127.0.0.1:${ports.bootstrap}`, artifact_dir: path.join(scratch, 'artifacts') },
  openai: {
    enabled: true,
    listen: `127.0.0.1:${ports.openai}`,
    timeout_sec: 300,
    api_keys: [apiKey],
    model_routes: [
      { model: profileName, adapter: 'cli', target: profileName, node: NODE_ID, workspace_required: false },
    ],
  },
  a2a: { enabled: false },
  // No drop_unsupported: the CLIs' requests pass as they are (codex's `include: ["reasoning.encrypted_content"]`
  // is taken, agent-test/cli-profiles.md).
  models: [
    {
      id: POOL_MODEL,
      providers: { 'fabric-e2e-vllm': 'fake-model' },
    },
  ],
  nodes: [
    {
      id: NODE_ID,
      token: nodeToken,
      runtime: { max_concurrency: 4, health_probe_interval_ms: 0 },
      adapters: {
        instances: [
          {
            name: 'vllm',
            type: 'openai_compat',
            enabled: true,
            provider: 'vllm',
            base_url: `${modelUrl}/v1`,
            request_timeout_ms: 60_000,
          },
          {
            name: 'cli',
            type: 'cli',
            enabled: true,
            profiles: { [profileName]: { ...shippedProfile, fabric_model: POOL_MODEL } },
          },
        ],
      },
      providers: [
        {
          id: 'fabric-e2e-vllm',
          type: 'vllm',
          category: 'api',
          adapter: 'vllm',
          models: ['fake-model'],
          capacity: 4,
          max_queue: 16,
          queue_timeout_ms: 30_000,
        },
      ],
    },
  ],
};
const configPath = path.join(scratch, 'edge.yaml');
writeFileSync(configPath, JSON.stringify(config, null, 2));

// The CLI inherits the node's HOME (isolated here) and PATH (the CLI cache first); no XDG dir of the real user.
const home = path.join(scratch, 'home');
const nodeWork = path.join(scratch, 'node-work');
mkdirSync(home, { recursive: true });
mkdirSync(nodeWork, { recursive: true });
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('XDG_')));

const children = [];
const start = (name, args, env = {}, cwd = scratch) => {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...baseEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (chunk) => (log = (log + chunk).slice(-40_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  children.push({ child, name, log: () => log });
  return { child, log: () => log };
};

const failures = [];
const step = (name, ok, detail) => {
  process.stdout.write(`${ok ? 'PASS' : 'FAIL'} ${profileName} ${name}: ${detail}\n`);
  if (!ok) failures.push(name);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const waitFor = async (predicate, timeoutMs) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await predicate()) return true;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) return false;
    await sleep(200);
  }
};
const edgeUrl = `http://127.0.0.1:${ports.openai}`;
const chat = async (model, content, timeoutMs) => {
  const response = await fetch(`${edgeUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = await response.text();
  let text = '';
  try {
    text = JSON.parse(body).choices?.[0]?.message?.content ?? '';
  } catch {
    // not JSON: reported below as the body
  }
  return { status: response.status, text, body: body.slice(0, 600) };
};
const metric = async (pattern) => {
  const text = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (pattern.test(line)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
};
const backendCalls = () =>
  readFileSync(modelLogPath, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('/v1/chat/completions')).length;
const cliProcesses = () => {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      // This test's CLIs only: they work under the scratch dir (other runs of the same CLI may be about).
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (commandLine.includes(clisDir) && cwd.startsWith(scratch) && state !== 'Z')
        found.push(`${entry} ${commandLine.slice(0, 100)}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
};

let status = 1;
try {
  const edge = start('edge', [edgeMain, 'serve', '--config', configPath]);
  const listening = await waitFor(
    async () => (await fetch(`${edgeUrl}/`, { method: 'HEAD' })).status === 200,
    30_000,
  );
  step('edge listening', listening, edgeUrl);
  if (!listening) throw new Error(`edge did not start\n${edge.log()}`);
  const nodeAgent = start(
    'node',
    [
      nodeMain,
      'run',
      '--edge',
      `127.0.0.1:${ports.transport}`,
      '--node-id',
      NODE_ID,
      '--data-dir',
      path.join(scratch, 'node'),
    ],
    {
      IOP_NODE_TOKEN: nodeToken,
      HOME: home,
      PATH: `${path.join(clisDir, 'node_modules/.bin')}:${process.env.PATH}`,
    },
    nodeWork,
  );
  const ready = await waitFor(async () => (await chat(POOL_MODEL, 'ping', 10_000)).status === 200, 30_000);
  step('pool model ready', ready, `${POOL_MODEL} answers through the node`);
  if (!ready) throw new Error(`node did not serve\n${nodeAgent.log()}\n${edge.log()}`);

  const callsBefore = backendCalls();
  const childBefore = await metric(/^iop_child_runs_total\{.*result="completed"/);
  const first = await chat(
    profileName,
    'Convert token iop_fabric_one and reply only with it',
    TURN_TIMEOUT_MS,
  );
  step(
    'first turn',
    first.status === 200 && /IOP_FABRIC_ONE_OK/.test(first.text),
    `${first.status} ${JSON.stringify(first.text || first.body).slice(0, 300)}`,
  );
  const callsAfterFirst = backendCalls();
  const second = await chat(profileName, 'Now convert iop_fabric_two', TURN_TIMEOUT_MS);
  step(
    'second turn continues the session',
    second.status === 200 &&
      /IOP_FABRIC_TWO_OK/.test(second.text) &&
      /history: IOP_FABRIC_ONE/.test(second.text),
    `${second.status} ${JSON.stringify(second.text || second.body).slice(0, 300)}`,
  );
  const callsAfterSecond = backendCalls();
  step(
    'the model server answered each turn',
    callsAfterFirst > callsBefore && callsAfterSecond > callsAfterFirst,
    `/v1/chat/completions calls: ${callsAfterFirst - callsBefore} in turn 1, ${callsAfterSecond - callsAfterFirst} in turn 2`,
  );
  const childRuns = (await metric(/^iop_child_runs_total\{.*result="completed"/)) - childBefore;
  const otherChildren = await metric(/^iop_child_runs_total\{.*result="(error|cancelled|rejected)"/);
  step(
    'the calls were child runs of the agent runs',
    childRuns >= 2 && childRuns === callsAfterSecond - callsBefore,
    `iop_child_runs_total completed +${childRuns}, error/cancelled/rejected ${otherChildren}`,
  );
  await sleep(1_000);
  const inFlight = await metric(/^iop_provider_in_flight\{/);
  step('nothing left in flight', inFlight === 0, `iop_provider_in_flight ${inFlight}`);
  const left = cliProcesses();
  step('no CLI process left', left.length === 0, left.join('; ') || 'none left');
  status = failures.length === 0 ? 0 : 1;
} catch (error) {
  process.stdout.write(`FAIL ${profileName}: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  for (const { child } of children) child.kill('SIGTERM');
  await sleep(500);
  for (const { child, name, log } of children) {
    if (child.exitCode === null) child.kill('SIGKILL');
    writeFileSync(path.join(scratch, `${name}.log`), log());
  }
}
process.stdout.write(
  status === 0 ? `${profileName}: all steps passed\n` : `${profileName}: failed (logs in ${scratch})\n`,
);
process.exit(status);
