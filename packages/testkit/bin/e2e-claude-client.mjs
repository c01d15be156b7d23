#!/usr/bin/env node
// The claude-client e2e profile (scripts/e2e-smoke.sh, `make test-e2e IOP_E2E_PROFILE=claude-client`): the real
// Claude Code CLI as a *client* of the edge's Anthropic Messages API. A real `iop-edge serve` and `iop-node run`
// on loopback; the node's openai_compat adapter serves the pool model `claude-pool` from the loopback agent model
// server (OpenAI chat completions, packages/testkit/src/agent-model-server). Claude Code runs offline with
// ANTHROPIC_BASE_URL = the edge and --model claude-pool, through an API key of openai.api_keys:
//   1. a text turn: `claude -p` ends with `is_error: false` and the model's answer (<TOKEN>_OK);
//   2. a tool turn (`RUN:echo …`): claude calls its Bash tool, sends the tool_result back through the edge, and
//      the model server receives it as an OpenAI `tool` message; the final result quotes the command's output;
//   3. the edge counted the Messages API requests under surface `anthropic`, and nothing is left in flight.
// Prints PASS/FAIL lines; exits non-zero on a failure. Needs the built apps (`make test-e2e` builds first).
//
//   e2e-claude-client.mjs --repo DIR --clis DIR --model-url URL --model-log FILE --scratch DIR
// (FILE: the agent model server's --verbose output)
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, option } from './e2e-script-support.mjs';

const repo = path.resolve(option('--repo'));
const clisDir = path.resolve(option('--clis'));
const modelUrl = option('--model-url').replace(/\/$/, '');
const scratch = path.resolve(option('--scratch'));
const modelLogPath = path.resolve(option('--model-log'));
const edgeMain = path.join(repo, 'apps/edge/dist/main.js');
const nodeMain = path.join(repo, 'apps/node/dist/main.js');
const claudeBin = path.join(clisDir, 'node_modules/.bin/claude');
const MODEL = 'claude-pool';
const RUN_TIMEOUT_MS = 120_000;

mkdirSync(scratch, { recursive: true });
const apiKey = `sk-e2e-${randomBytes(12).toString('hex')}`;
const nodeToken = `iop_e2e_claude_${randomBytes(12).toString('hex')}`;
const ports = { transport: await freePort(), openai: await freePort(), metrics: await freePort() };
const admin = await freePort();
const bootstrap = await freePort();
// JSON is valid YAML.
const config = {
  edge: {
    id: 'edge-claude-client',
    listen: `127.0.0.1:${ports.transport}`,
    data_dir: path.join(scratch, 'edge'),
  },
  logging: { level: 'info', format: 'json' },
  metrics: { enabled: true, listen: `127.0.0.1:${ports.metrics}` },
  refresh: { enabled: true, listen: `127.0.0.1:${admin}` },
  bootstrap: { listen: `127.0.0.1:${bootstrap}`, artifact_dir: path.join(scratch, 'artifacts') },
  openai: { enabled: true, listen: `127.0.0.1:${ports.openai}`, timeout_sec: 120, api_keys: [apiKey] },
  a2a: { enabled: false },
  models: [{ id: MODEL, providers: { 'claude-e2e-vllm': 'fake-model' } }],
  nodes: [
    {
      id: 'claude-e2e-node',
      token: nodeToken,
      runtime: { max_concurrency: 8, health_probe_interval_ms: 0 },
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
        ],
      },
      providers: [
        {
          id: 'claude-e2e-vllm',
          type: 'vllm',
          category: 'api',
          adapter: 'vllm',
          models: ['fake-model'],
          capacity: 4,
          max_queue: 16,
          queue_timeout_ms: 5_000,
        },
      ],
    },
  ],
};
const configPath = path.join(scratch, 'edge.yaml');
writeFileSync(configPath, JSON.stringify(config, null, 2));

const children = [];
const start = (name, args, env = {}) => {
  const child = spawn(process.execPath, args, {
    cwd: scratch,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (chunk) => (log = (log + chunk).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  children.push(child);
  return { child, log: () => log, name };
};
const edge = start('edge', [edgeMain, 'serve', '--config', configPath]);
const edgeUrl = `http://127.0.0.1:${ports.openai}`;

const failures = [];
const step = (name, ok, detail) => {
  process.stdout.write(`${ok ? 'PASS' : 'FAIL'} claude-client ${name}: ${detail}\n`);
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
const postMessages = (body) =>
  fetch(`${edgeUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
const metric = async (pattern) => {
  const text = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (pattern.test(line)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
};

/** One `claude -p` turn: the prompt on stdin, stream-json lines out; killed (process group) at the deadline. */
const claudeTurn = (prompt, extraArgs) =>
  new Promise((resolve) => {
    const home = path.join(scratch, 'claude-home');
    const work = path.join(scratch, 'work');
    mkdirSync(home, { recursive: true });
    mkdirSync(work, { recursive: true });
    const child = spawn(
      claudeBin,
      [
        '-p',
        '--output-format',
        'stream-json',
        '--verbose',
        '--model',
        MODEL,
        '--session-id',
        randomUUID(),
        ...extraArgs,
      ],
      {
        cwd: work,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {
          PATH: process.env.PATH,
          HOME: home,
          CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
          ANTHROPIC_BASE_URL: edgeUrl,
          ANTHROPIC_API_KEY: apiKey,
          ANTHROPIC_MODEL: MODEL,
          ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL,
          ANTHROPIC_SMALL_FAST_MODEL: MODEL,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
        },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-5000)));
    const killTree = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    // Claude Code may stay alive after its final result line: the result ends the turn.
    const watchdog = setTimeout(killTree, RUN_TIMEOUT_MS);
    const poll = setInterval(() => {
      if (/"type":"result"/.test(stdout)) setTimeout(killTree, 2_000);
    }, 200);
    child.on('exit', () => {
      clearTimeout(watchdog);
      clearInterval(poll);
      killTree();
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => {
          try {
            return JSON.parse(line);
          } catch {
            return {};
          }
        });
      resolve({ result: lines.find((line) => line.type === 'result'), lines, stderr });
    });
    child.stdin.end(`${prompt}\n`);
  });

let status = 1;
try {
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
      'claude-e2e-node',
      '--data-dir',
      path.join(scratch, 'node'),
    ],
    { IOP_NODE_TOKEN: nodeToken },
  );
  const ready = await waitFor(
    async () =>
      (await postMessages({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'ping' }] }))
        .ok,
    30_000,
  );
  step('pool model ready', ready, `${MODEL} answers POST /v1/messages`);
  if (!ready) throw new Error(`node did not serve\n${nodeAgent.log()}\n${edge.log()}`);

  const text = await claudeTurn('say iop_claude_one', []);
  step(
    'text turn',
    text.result?.is_error === false && text.result?.result === 'IOP_CLAUDE_ONE_OK',
    `result ${JSON.stringify(text.result ?? { stderr: text.stderr }).slice(0, 400)}`,
  );

  const tool = await claudeTurn('RUN:echo iop_tool_marker', ['--allowedTools', 'Bash']);
  const toolUse = tool.lines.some(
    (line) => line.type === 'assistant' && line.message?.content?.some((block) => block.type === 'tool_use'),
  );
  step(
    'tool turn',
    toolUse &&
      tool.result?.is_error === false &&
      /TOOL_OUTPUT: .*iop_tool_marker/.test(tool.result?.result ?? ''),
    `tool_use ${toolUse}, result ${JSON.stringify(tool.result ?? { stderr: tool.stderr }).slice(0, 400)}`,
  );
  // The model server behind the node (started with --verbose) logs one line per request with its last turn: the
  // tool's output must have reached it as an OpenAI `tool` message on /v1/chat/completions.
  const modelLog = readFileSync(modelLogPath, 'utf8');
  const toolLine = modelLog
    .split('\n')
    .find((line) => line.startsWith('/v1/chat/completions') && /last=tool:.*iop_tool_marker/.test(line));
  step(
    'tool_result reached the backend as a tool message',
    toolLine !== undefined,
    (toolLine ?? `no such line in ${modelLogPath}`).slice(0, 200),
  );

  const counted = await metric(
    /^iop_http_requests_total\{.*surface="anthropic".*route="\/v1\/messages".*status="200"/,
  );
  step('edge counted the requests under surface anthropic', counted >= 4, `${counted} POST /v1/messages 200`);
  const inFlight = await metric(/^iop_provider_in_flight\{/);
  step('nothing left in flight', inFlight === 0, `iop_provider_in_flight ${inFlight}`);
  status = failures.length === 0 ? 0 : 1;
} catch (error) {
  process.stdout.write(`FAIL claude-client: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await sleep(500);
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
}
process.exit(status);
