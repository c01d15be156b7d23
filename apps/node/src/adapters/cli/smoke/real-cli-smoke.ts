// Drives the cli adapter directly against a real coding-agent CLI (installed from npm into a cache folder) and
// the agent model server, for `make test-e2e IOP_E2E_PROFILE=<cli>` (scripts/e2e-smoke.sh). Steps: two prompts
// in one IOP session (the second must see the first), cancel during a long tool call (the session stays usable),
// terminate-session (no process of the CLI survives). Prints one line per step; exits non-zero on a failure.
//
//   node apps/node/dist/adapters/cli/smoke/real-cli-smoke.js --profile opencode --clis /work/.cache/clis \
//        --model-url http://127.0.0.1:PORT --scratch /tmp/dir [--print-profile]
// --print-profile only prints the profile (JSON, wire field names) for an edge config and exits.
import { systemClock } from '@iop/clock';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { create, type CliProfile, type RunEventPart } from '@iop/wire';
import { createCliAdapter } from '../cli-adapter.js';
import { createSmokeProfile, SMOKE_PROFILES, type SmokeProfileName } from './smoke-profiles.js';

interface Options {
  profile: SmokeProfileName;
  clisDir: string;
  modelUrl: string;
  scratch: string;
}

function parseOptions(argv: string[]): Options {
  const value = (flag: string) => {
    const index = argv.indexOf(flag);
    const found = index >= 0 ? argv[index + 1] : undefined;
    if (!found) throw new Error(`missing ${flag}`);
    return found;
  };
  const profile = value('--profile');
  if (!(SMOKE_PROFILES as readonly string[]).includes(profile)) {
    throw new Error(`unknown profile ${profile} (${SMOKE_PROFILES.join(', ')})`);
  }
  return {
    profile: profile as SmokeProfileName,
    clisDir: path.resolve(value('--clis')),
    modelUrl: value('--model-url'),
    scratch: path.resolve(value('--scratch')),
  };
}

async function collect(
  adapter: ReturnType<typeof createCliAdapter>,
  target: string,
  prompt: string,
  workspace: string,
  options: { signal?: AbortSignal; onPart?: (part: RunEventPart) => void; timeoutMs?: number } = {},
): Promise<RunEventPart[]> {
  const parts: RunEventPart[] = [];
  const request = create.runRequest({
    runId: `smoke-${Date.now()}`,
    adapter: 'cli',
    target,
    sessionId: 'e2e',
    workspace,
    timeoutMs: options.timeoutMs ?? 180_000,
    messages: [create.chatMessage({ role: 'user', content: prompt })],
  });
  for await (const part of adapter.run(request, { signal: options.signal ?? new AbortController().signal })) {
    parts.push(part);
    options.onPart?.(part);
  }
  return parts;
}

const text = (parts: RunEventPart[]) =>
  parts.map((part) => (part.type === 'text-delta' ? part.text : '')).join('');
const last = (parts: RunEventPart[]) => parts[parts.length - 1];

/** Processes whose command line mentions `needle` (Linux /proc). */
function processesMentioning(needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      // The smoke runner itself (and wrappers such as timeout) name the cache folder in their arguments.
      if (commandLine.includes('real-cli-smoke')) continue;
      if (commandLine.includes(needle) && state !== 'Z') found.push(`${entry} ${commandLine.slice(0, 120)}`);
    } catch {
      // Gone while listing.
    }
  }
  return found;
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const workspace = path.join(options.scratch, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const setup = await createSmokeProfile(options.profile, {
    clisDir: options.clisDir,
    modelUrl: options.modelUrl,
    home: path.join(options.scratch, 'home'),
  });
  if (process.argv.includes('--print-profile')) {
    process.stdout.write(`${JSON.stringify(setup.profile)}\n`);
    return 0;
  }
  const profile: CliProfile = create.cliProfile(setup.profile);
  writeFileSync(
    path.join(options.scratch, 'profile.json'),
    JSON.stringify({ ...setup.profile, env: Object.keys(setup.profile.env ?? {}) }, null, 2),
  );
  const adapter = createCliAdapter(
    {
      name: 'cli',
      type: 'cli',
      enabled: true,
      cli: {
        profiles: { [options.profile]: profile },
        maxSessions: 4,
        sessionIdleTtlMs: 0,
        workspaceRoots: [options.scratch],
        runAs: '',
      },
      http: undefined,
    },
    {
      fetch,
      now: Date.now,
      clock: systemClock,
      agentCwd: process.cwd(),
      inheritedEnv: process.env,
      logger: {
        debug: () => undefined,
        info: (fields, message) => process.stderr.write(`info ${message} ${JSON.stringify(fields)}\n`),
        warn: (fields, message) => process.stderr.write(`warn ${message} ${JSON.stringify(fields)}\n`),
        error: (fields, message) => process.stderr.write(`error ${message} ${JSON.stringify(fields)}\n`),
      },
    },
  );
  const failures: string[] = [];
  const step = (name: string, ok: boolean, detail: string) => {
    process.stdout.write(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}\n`);
    if (!ok) failures.push(name);
  };
  try {
    const first = await collect(
      adapter,
      options.profile,
      'Convert token iop_e2e_one and reply only with it',
      workspace,
    );
    step(
      'first prompt',
      last(first)?.type === 'complete' && text(first).includes('IOP_E2E_ONE_OK'),
      `${JSON.stringify(text(first))} ${JSON.stringify(last(first))}`,
    );

    const second = await collect(adapter, options.profile, 'Now convert iop_e2e_two', workspace);
    const sawHistory = text(second).includes('history: IOP_E2E_ONE');
    if (setup.carriesHistory) {
      step(
        'second prompt sees the first',
        last(second)?.type === 'complete' && sawHistory,
        JSON.stringify(text(second)),
      );
    } else {
      step(
        'second prompt (no continuation in this CLI mode)',
        last(second)?.type === 'complete' && text(second).includes('IOP_E2E_TWO_OK'),
        `${JSON.stringify(text(second))}; ${setup.historyNote}`,
      );
    }

    // Cancel while the CLI runs a long shell command; the command and the turn stop, the session stays.
    const controller = new AbortController();
    let toolSeenAt = 0;
    const cancelled = await collect(adapter, options.profile, 'RUN:sleep 47 && echo iop_never', workspace, {
      signal: controller.signal,
      onPart: (part) => {
        if (part.type === 'tool-call' && !toolSeenAt) {
          toolSeenAt = Date.now();
          setTimeout(() => controller.abort('e2e cancel'), 1500);
        }
      },
      timeoutMs: 120_000,
    });
    step(
      'cancel during a tool call',
      last(cancelled)?.type === 'cancelled' && toolSeenAt > 0,
      JSON.stringify(last(cancelled)),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const sleepers = processesMentioning('sleep 47');
    step('cancel stopped the tool process', sleepers.length === 0, sleepers.join('; ') || 'no sleep 47 left');

    const afterCancel = await collect(adapter, options.profile, 'And convert iop_e2e_three', workspace);
    step(
      'session usable after cancel',
      last(afterCancel)?.type === 'complete' &&
        text(afterCancel).includes('IOP_E2E_THREE_OK') &&
        (!setup.carriesHistory || text(afterCancel).includes('IOP_E2E_ONE')),
      JSON.stringify(text(afterCancel)),
    );

    const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
      signal: new AbortController().signal,
    });
    step(
      'sessions lists the session',
      sessions.result['session.0.session'] === 'e2e',
      JSON.stringify(sessions.result),
    );
    const terminated = await adapter.terminateSession(options.profile, 'e2e');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const leftovers = processesMentioning(options.clisDir);
    step(
      'terminate-session leaves no CLI process',
      terminated && leftovers.length === 0,
      leftovers.join('; ') || 'none left',
    );
  } finally {
    await adapter.close();
  }
  process.stdout.write(
    failures.length === 0
      ? `e2e ${options.profile}: all steps passed\n`
      : `e2e ${options.profile}: failed: ${failures.join(', ')}\n`,
  );
  return failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
