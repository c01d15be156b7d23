// Pure formatting of console output lines: node command results, session listings, provider rows and run
// events. Kept free of I/O so the exact output style of the product README can be tested line by line.
import type { RunEventPart } from '@iop/wire';
import type { AgentRunView } from '../service/types.js';
import type { TextLineAssembler } from './text-line-assembler.js';

/** What `/providers` prints per provider; the admin `ProviderStatus` message satisfies it structurally. */
export interface ProviderStatusView {
  providerId: string;
  nodeId: string;
  status: string;
  health: string;
  capacity: number;
  inFlight: number;
  queued: number;
  servedModels: string[];
  /** Served models loaded on the backend and how far that is known (fresh | stale | unknown); absent = unknown. */
  residentModels?: string[];
  residentState?: string;
}

/** A value inside double quotes with JSON escaping, so spaces and quotes in it stay unambiguous. */
export function quote(value: string): string {
  return JSON.stringify(value);
}

/** `  key = value` lines in sorted key order (byte order, as the README's result-map style). */
export function formatResultMap(result: Record<string, string>): string[] {
  return Object.keys(result)
    .sort()
    .map((key) => `  ${key} = ${result[key] ?? ''}`);
}

const SESSION_KEY = /^session\.(\d+)\.(.+)$/;

/**
 * `/sessions` output: when the result carries `session.<n>.<field>` keys, one row per session
 * (`[n] mode=… target=… session=…`) under a `sessions: <count>` line; otherwise the sorted key listing.
 */
export function formatSessions(result: Record<string, string>): string[] {
  const groups = new Map<number, Record<string, string>>();
  for (const [key, value] of Object.entries(result)) {
    const match = SESSION_KEY.exec(key);
    if (!match) continue;
    const index = Number(match[1]);
    const field = match[2] ?? '';
    const group = groups.get(index) ?? {};
    group[field] = value;
    groups.set(index, group);
  }
  const declared = result['sessions'];
  if (groups.size === 0) {
    if (declared !== undefined && Object.keys(result).length === 1) return [`  sessions: ${declared}`];
    return formatResultMap(result);
  }
  const count = declared !== undefined && /^\d+$/.test(declared) ? declared : String(groups.size);
  const lines = [`  sessions: ${count}`];
  for (const index of [...groups.keys()].sort((a, b) => a - b)) {
    const group = groups.get(index) ?? {};
    const session = group['session'] ?? group['session_id'] ?? '';
    lines.push(`  [${index}] mode=${group['mode'] ?? ''} target=${group['target'] ?? ''} session=${session}`);
  }
  return lines;
}

export function formatProviderLine(provider: ProviderStatusView): string {
  const models = provider.servedModels.length > 0 ? provider.servedModels.join(',') : '-';
  return (
    `${provider.providerId} node=${provider.nodeId || '-'} status=${provider.status} health=${provider.health} ` +
    `capacity=${provider.capacity} in_flight=${provider.inFlight} queued=${provider.queued} models=${models}` +
    residentField(provider)
  );
}

/** An agent run under `/providers`: its model calls (child runs) live and in all, and the tokens so far. */
export function formatAgentRunLine(run: AgentRunView): string {
  return (
    `agent ${run.runId} node=${run.nodeId} key=${run.principal || '-'} model=${run.model} ` +
    `children=${run.liveChildren}/${run.children} tokens=${run.tokens} child_tokens=${run.childTokens}`
  );
}

/** ` resident=a,b` (`-` for none; `(stale)` when the backend stopped answering); nothing when unknown. */
function residentField(provider: ProviderStatusView): string {
  const state = provider.residentState;
  if (state !== 'fresh' && state !== 'stale') return '';
  const models = provider.residentModels?.length ? provider.residentModels.join(',') : '-';
  return ` resident=${models}${state === 'stale' ? '(stale)' : ''}`;
}

/** Text assembly state of one run: answer text and reasoning text are assembled into lines separately. */
export interface RunTextState {
  text: TextLineAssembler;
  reasoning: TextLineAssembler;
}

/** The console lines one run event produces. Terminal parts first flush any unterminated text. */
export function formatRunPart(
  label: string,
  runId: string,
  part: RunEventPart,
  state: RunTextState,
): string[] {
  const event = (body: string): string => `[${label}-evt] ${body}`;
  const flushed = (): string[] => [
    ...state.reasoning.flush().map((line) => `[${label}-think] ${line}`),
    ...state.text.flush().map((line) => `[${label}-msg] ${line}`),
  ];
  switch (part.type) {
    case 'start':
      return [event(`start run_id=${runId}`)];
    case 'text-delta':
      return state.text.push(part.text).map((line) => `[${label}-msg] ${line}`);
    case 'reasoning-delta':
      return state.reasoning.push(part.text).map((line) => `[${label}-think] ${line}`);
    case 'tool-call':
      return [
        event(
          `tool-call run_id=${runId} id=${part.call.id} name=${part.call.name} arguments=${quote(part.call.argumentsJson)}`,
        ),
      ];
    case 'usage':
      return [
        event(
          `usage run_id=${runId} prompt_tokens=${part.usage.promptTokens} ` +
            `completion_tokens=${part.usage.completionTokens} total_tokens=${part.usage.totalTokens}`,
        ),
      ];
    case 'progress':
      return [event(`progress run_id=${runId} kind=${part.kind} message=${quote(part.message)}`)];
    case 'embeddings':
      return [event(`embeddings run_id=${runId} count=${part.items.length}`)];
    case 'complete':
      return [...flushed(), event(`complete run_id=${runId} detail=${quote(part.detail)}`)];
    case 'error':
      return [...flushed(), event(`error run_id=${runId} code=${part.code} message=${quote(part.message)}`)];
    case 'cancelled':
      return [...flushed(), event(`cancelled run_id=${runId} reason=${quote(part.reason)}`)];
    default: {
      const unreachable: never = part;
      return [event(`unknown event run_id=${runId} ${quote(JSON.stringify(unreachable))}`)];
    }
  }
}
