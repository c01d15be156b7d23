// What every CLI session kind needs from the adapter (process control, logging, time) and what one run hands to
// a session. Kept in one place so the three session kinds share one shape.
import type { RunEventPart } from '@iop/wire';
import type { AdapterLogger } from '../adapter.js';
import type { ModelEndpointValues } from '../model-endpoint.js';
import type { ResolvedProfile } from './cli-profile.js';
import type { ProcessLauncher } from './process-launcher.js';
import type { ProcessTreeControl } from './process-tree.js';

export interface SessionServices {
  launcher: ProcessLauncher;
  tree: ProcessTreeControl;
  logger: AdapterLogger;
  now: () => number;
  fetch: typeof fetch;
  randomId: () => string;
  /** SIGTERM → SIGKILL grace when a tree is killed. */
  killGraceMs: number;
}

export interface SessionSetup {
  profile: ResolvedProfile;
  target: string;
  sessionId: string;
  /** Working directory of the session's processes (the first run's workspace). */
  workspace: string;
  /** Complete child environment (allow-listed inheritance plus the profile's env). */
  env: Record<string, string>;
}

export interface SessionRun {
  runId: string;
  prompt: string;
  signal: AbortSignal;
  /** Absolute time (services.now) when the run deadline fires. */
  deadlineAt: number;
  startedAt: number;
  /** The run's model endpoint (a `fabric_model` profile); one-shot sessions fill it into args and env. */
  model?: ModelEndpointValues | undefined;
}

/** Reported to the adapter so it can record usage-limit information for the `status` command. */
export type RateLimitObserver = (target: string, info: Record<string, unknown>) => void;

export type TerminalPart = Extract<RunEventPart, { type: 'complete' | 'error' | 'cancelled' }>;

export function errorPart(
  code: string,
  message: string,
  retryable: boolean,
  backendMs: number,
): TerminalPart {
  return { type: 'error', code, message, retryable, backendMs };
}

export function completePart(detail: string, backendMs: number, finishReason = 'stop'): TerminalPart {
  return { type: 'complete', detail, finishReason, backendMs };
}

export function cancelledReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (typeof reason === 'string' && reason) return reason;
  return 'cancelled';
}

export function describeExit(exit: { exitCode: number | null; signal: string | null }): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.exitCode ?? 'unknown'}`;
}

/** Keeps the last `limit` characters of a stream (for error messages). */
export class TextTail {
  private text = '';
  constructor(private readonly limit = 4000) {}
  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.limit);
  }
  toString(): string {
    return this.text.trim();
  }
}
