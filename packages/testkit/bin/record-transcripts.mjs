#!/usr/bin/env node
// Records the real stdout of coding-agent CLIs into packages/testkit/transcripts/<cli>/, for the cli adapter's
// replay tests. Every CLI runs offline against the agent model server (loopback), with an isolated HOME and
// config dir per CLI. The CLIs themselves come from npm into a cache folder outside the repo:
//
//   npm install --prefix /work/.cache/clis @anthropic-ai/claude-code @openai/codex opencode-ai cline
//   node packages/testkit/bin/record-transcripts.mjs --clis /work/.cache/clis [claude codex cline opencode]
//
// Needs the built testkit (pnpm --filter @iop/testkit build). Scenarios per CLI: a first turn, a resumed turn
// that must see the first (history), a shell tool call (RUN:<cmd>), plus CLI specifics (claude partial
// messages and /usage, codex rate_limits from its rollout file, opencode serve SSE events).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgentModelServer } from '../dist/agent-model-server/agent-model-server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const outRoot = path.resolve(here, '../transcripts');
const argv = process.argv.slice(2);
const clisIndex = argv.indexOf('--clis');
const clisDir = clisIndex >= 0 ? path.resolve(argv[clisIndex + 1]) : '/work/.cache/clis';
const selected = argv.filter((arg, index) => !arg.startsWith('--') && index !== clisIndex + 1);
const wanted = selected.length > 0 ? selected : ['claude', 'codex', 'cline', 'opencode'];
const bin = (name) => path.join(clisDir, 'node_modules/.bin', name);

const server = await startAgentModelServer({ chunkDelayMs: 2 });
const scratch = mkdtempSync(path.join(tmpdir(), 'iop-record-'));
const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', TERM: 'dumb' };

/** Runs a command to completion (or kills its group after timeoutMs); resolves with stdout, stderr, code. */
function run(command, args, { cwd, env, input, timeoutMs = 120_000 }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      resolve({ stdout, stderr, code, signal });
    });
  });
}

function save(cli, name, text) {
  const directory = path.join(outRoot, cli);
  mkdirSync(directory, { recursive: true });
  writeFileSync(path.join(directory, name), text);
  process.stdout.write(`  ${cli}/${name} (${text.split('\n').filter(Boolean).length} lines)\n`);
}

function firstJson(text, key) {
  for (const line of text.split('\n')) {
    try {
      const value = JSON.parse(line)[key];
      if (value) return value;
    } catch {}
  }
  throw new Error(`no ${key} in output:\n${text.slice(0, 2000)}`);
}

function check(cli, name, result) {
  if (result.code !== 0)
    throw new Error(`${cli} ${name} exited ${result.code ?? result.signal}: ${result.stderr.slice(-2000)}`);
  return result.stdout;
}

async function recordClaude() {
  const home = path.join(scratch, 'claude');
  const workspace = path.join(home, 'ws');
  mkdirSync(workspace, { recursive: true });
  const env = {
    ...baseEnv,
    HOME: home,
    ANTHROPIC_BASE_URL: server.url,
    ANTHROPIC_API_KEY: 'sk-ant-dummy',
    ANTHROPIC_MODEL: 'fake-model',
    ANTHROPIC_DEFAULT_HAIKU_MODEL: 'fake-model',
    ANTHROPIC_SMALL_FAST_MODEL: 'fake-model',
    CLAUDE_CONFIG_DIR: path.join(home, 'config'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
  const common = ['-p', '--output-format', 'stream-json', '--verbose'];
  const sessionId = randomUUID();
  const first = check(
    'claude',
    'turn1',
    await run(bin('claude'), [...common, '--session-id', sessionId], {
      cwd: workspace,
      env,
      input: 'Convert token iop_claude_one\n',
    }),
  );
  save('claude', 'turn1.jsonl', first);
  const second = check(
    'claude',
    'turn2',
    await run(bin('claude'), [...common, '--resume', sessionId], {
      cwd: workspace,
      env,
      input: 'Now convert iop_claude_two\n',
    }),
  );
  save('claude', 'turn2-resume.jsonl', second);
  const tool = check(
    'claude',
    'tool',
    await run(bin('claude'), [...common, '--resume', sessionId, '--allowedTools', 'Bash'], {
      cwd: workspace,
      env,
      input: 'RUN:echo hello_from_tool iop_claude_tool\n',
    }),
  );
  save('claude', 'tool.jsonl', tool);
  const partial = check(
    'claude',
    'partial',
    await run(bin('claude'), [...common, '--include-partial-messages', '--session-id', randomUUID()], {
      cwd: workspace,
      env,
      input: 'Convert iop_claude_partial please\n',
    }),
  );
  save('claude', 'partial-messages.jsonl', partial);
  const usage = await run(bin('claude'), ['-p', '/usage'], { cwd: workspace, env });
  save('claude', 'usage-command.txt', usage.stdout);
}

async function recordCodex() {
  const home = path.join(scratch, 'codex');
  const workspace = path.join(home, 'ws');
  const codexHome = path.join(home, 'codex-home');
  mkdirSync(workspace, { recursive: true });
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    `model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "Fake local"\nbase_url = "${server.url}/v1"\nenv_key = "FAKE_API_KEY"\nwire_api = "responses"\n`,
  );
  const env = { ...baseEnv, HOME: home, CODEX_HOME: codexHome, FAKE_API_KEY: 'dummy' };
  const common = ['exec', '--json', '--skip-git-repo-check'];
  const first = check(
    'codex',
    'turn1',
    await run(bin('codex'), [...common, 'Convert token iop_codex_one'], { cwd: workspace, env }),
  );
  save('codex', 'turn1.jsonl', first);
  const threadId = firstJson(first, 'thread_id');
  const second = check(
    'codex',
    'turn2',
    await run(bin('codex'), [...common, 'resume', threadId, 'Now convert iop_codex_two'], {
      cwd: workspace,
      env,
    }),
  );
  save('codex', 'turn2-resume.jsonl', second);
  const tool = check(
    'codex',
    'tool',
    await run(
      bin('codex'),
      [
        ...common,
        '--dangerously-bypass-approvals-and-sandbox',
        'resume',
        threadId,
        'RUN:echo hello_from_tool iop_codex_tool',
      ],
      { cwd: workspace, env },
    ),
  );
  save('codex', 'tool.jsonl', tool);
  // Only the rate-limit carrying lines of the rollout file: the rest repeats prompts and instructions.
  const rollouts = [];
  const walk = (directory) => {
    for (const entry of readdirSync(directory)) {
      const full = path.join(directory, entry);
      if (statSync(full).isDirectory()) walk(full);
      else if (entry.startsWith('rollout-')) rollouts.push(full);
    }
  };
  walk(path.join(codexHome, 'sessions'));
  const lines = rollouts.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes('"rate_limits"')),
  );
  save('codex', 'rollout-rate-limits.jsonl', `${lines.join('\n')}\n`);
}

async function recordCline() {
  const home = path.join(scratch, 'cline');
  const workspace = path.join(home, 'ws');
  const dataDir = path.join(home, 'data');
  mkdirSync(workspace, { recursive: true });
  const env = { ...baseEnv, HOME: home };
  check(
    'cline',
    'auth',
    await run(
      bin('cline'),
      [
        'auth',
        '-p',
        'openai-compatible',
        '-k',
        'dummy',
        '-m',
        'fake-model',
        '-b',
        `${server.url}/v1`,
        '--data-dir',
        dataDir,
      ],
      { cwd: workspace, env },
    ),
  );
  const first = check(
    'cline',
    'turn1',
    await run(bin('cline'), ['--json', '--data-dir', dataDir, 'Convert token iop_cline_one'], {
      cwd: workspace,
      env,
    }),
  );
  save('cline', 'turn1.jsonl', first);
  const tool = check(
    'cline',
    'tool',
    await run(
      bin('cline'),
      ['-y', '--json', '--data-dir', dataDir, 'RUN:echo hello_from_tool iop_cline_tool'],
      { cwd: workspace, env },
    ),
  );
  save('cline', 'tool-yolo.jsonl', tool);
}

function opencodeEnv(home) {
  return {
    ...baseEnv,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_CONFIG_CONTENT: JSON.stringify({
      autoupdate: false,
      share: 'disabled',
      model: 'fake/fake-model',
      small_model: 'fake/fake-model',
      enabled_providers: ['fake'],
      provider: {
        fake: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Fake local',
          options: { baseURL: `${server.url}/v1`, apiKey: 'dummy' },
          models: {
            'fake-model': { name: 'Fake Model', tool_call: true, limit: { context: 128000, output: 4096 } },
          },
        },
      },
    }),
  };
}

async function recordOpencode() {
  const home = path.join(scratch, 'opencode');
  const workspace = path.join(home, 'ws');
  mkdirSync(workspace, { recursive: true });
  const env = opencodeEnv(home);
  const first = check(
    'opencode',
    'run1',
    await run(bin('opencode'), ['run', '--format', 'json'], {
      cwd: workspace,
      env,
      input: 'Convert token iop_opencode_one\n',
    }),
  );
  save('opencode', 'run-turn1.jsonl', first);
  const sessionId = firstJson(first, 'sessionID');
  const tool = check(
    'opencode',
    'run-tool',
    await run(bin('opencode'), ['run', '--format', 'json', '-s', sessionId], {
      cwd: workspace,
      env,
      input: 'RUN:echo hello_from_tool iop_opencode_tool\n',
    }),
  );
  save('opencode', 'run-tool.jsonl', tool);
  await recordOpencodeServe(workspace, env);
}

/** Drives `opencode serve` over HTTP and records the raw /event SSE data lines of two turns. */
async function recordOpencodeServe(workspace, env) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(bin('opencode'), ['serve', '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: workspace,
    env,
    detached: true,
    stdio: 'ignore',
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let attempt = 0; ; attempt += 1) {
      try {
        if ((await fetch(`${base}/global/health`)).ok) break;
      } catch {}
      if (attempt > 300) throw new Error('opencode serve did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const session = await (
      await fetch(`${base}/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'iop' }),
      })
    ).json();
    const events = await fetch(`${base}/event`, { headers: { accept: 'text/event-stream' } });
    const reader = events.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const turn = async (text) => {
      const lines = [];
      await fetch(`${base}/session/${session.id}/prompt_async`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: { providerID: 'fake', modelID: 'fake-model' },
          parts: [{ type: 'text', text }],
        }),
      });
      const deadline = Date.now() + 90_000;
      for (;;) {
        if (Date.now() > deadline) throw new Error('no session.idle');
        const { value, done } = await reader.read();
        if (done) throw new Error('event stream ended');
        buffer += decoder.decode(value, { stream: true });
        let index;
        let idle = false;
        while ((index = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, index);
          buffer = buffer.slice(index + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          lines.push(data);
          const event = JSON.parse(data);
          if (event.type === 'session.idle' && event.properties?.sessionID === session.id) idle = true;
        }
        if (idle) return `${lines.join('\n')}\n`;
      }
    };
    save('opencode', 'serve-turn1-events.jsonl', await turn('Convert token iop_opencode_one'));
    save('opencode', 'serve-turn2-events.jsonl', await turn('Now convert iop_opencode_two'));
    save('opencode', 'serve-tool-events.jsonl', await turn('RUN:echo hello_from_tool iop_opencode_tool'));
    await reader.cancel();
  } finally {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }
}

const recorders = { claude: recordClaude, codex: recordCodex, cline: recordCline, opencode: recordOpencode };
let failed = false;
try {
  for (const cli of wanted) {
    if (!recorders[cli]) throw new Error(`unknown cli ${cli}`);
    process.stdout.write(`${cli}:\n`);
    try {
      await recorders[cli]();
    } catch (error) {
      failed = true;
      process.stderr.write(`${cli} failed: ${error.stack ?? error}\n`);
    }
  }
} finally {
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
