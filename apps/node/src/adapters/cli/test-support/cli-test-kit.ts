// Shared helpers of the cli adapter tests: adapter instances from profiles, request builders, run collection.
import { systemClock } from '@iop/clock';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { create, type AdapterInstance, type CliProfile, type RunEventPart, type RunRequest } from '@iop/wire';
import type { Adapter } from '../../adapter.js';
import { createCliAdapter, type CliAdapterDeps } from '../cli-adapter.js';
import { isProcessGone } from '../process-tree.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../../..');
export const fakeCliPath = path.join(repoRoot, 'bin/iop-fake-cli');
export const testkitBin = path.join(repoRoot, 'packages/testkit/bin');
export const transcriptsDir = path.join(repoRoot, 'packages/testkit/transcripts');

export const quietLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export function cliInstance(
  profiles: Record<string, Partial<CliProfile>>,
  settings: {
    maxSessions?: number;
    sessionIdleTtlMs?: number;
    workspaceRoots?: string[];
    runAs?: string;
  } = {},
): AdapterInstance {
  return {
    name: 'cli',
    type: 'cli',
    enabled: true,
    cli: {
      profiles: Object.fromEntries(
        Object.entries(profiles).map(([name, fields]) => [name, create.cliProfile(fields)]),
      ),
      maxSessions: settings.maxSessions ?? 0,
      sessionIdleTtlMs: settings.sessionIdleTtlMs ?? 0,
      workspaceRoots: settings.workspaceRoots ?? [],
      runAs: settings.runAs ?? '',
    },
    http: undefined,
  };
}

export function testAdapter(instance: AdapterInstance, deps: Partial<CliAdapterDeps> = {}): Adapter {
  return createCliAdapter(instance, {
    fetch,
    logger: quietLogger,
    now: Date.now,
    clock: systemClock,
    agentCwd: repoRoot,
    killGraceMs: 300,
    ...deps,
  });
}

export function request(target: string, prompt: string, fields: Partial<RunRequest> = {}): RunRequest {
  return create.runRequest({
    runId: `run-${Math.random().toString(36).slice(2, 8)}`,
    adapter: 'cli',
    target,
    sessionId: 'default',
    messages: [create.chatMessage({ role: 'user', content: prompt })],
    ...fields,
  });
}

export async function collect(
  adapter: Adapter,
  runRequest: RunRequest,
  signal: AbortSignal = new AbortController().signal,
): Promise<RunEventPart[]> {
  const parts: RunEventPart[] = [];
  for await (const part of adapter.run(runRequest, { signal })) parts.push(part);
  return parts;
}

export function texts(parts: RunEventPart[]): string {
  return parts.map((part) => (part.type === 'text-delta' ? part.text : '')).join('');
}

export function terminal(parts: RunEventPart[]): RunEventPart | undefined {
  return parts[parts.length - 1];
}

export function tempDir(prefix: string): { path: string; remove: () => void } {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  return { path: directory, remove: () => rmSync(directory, { recursive: true, force: true }) };
}

export async function readPid(file: string, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (pid > 0) return pid;
    } catch {
      // Not written yet.
    }
    if (Date.now() > deadline) throw new Error(`no pid in ${file}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function waitGone(pid: number, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (isProcessGone(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return isProcessGone(pid);
}
