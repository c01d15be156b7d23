// A persistent session: one long-lived CLI process (pipes, or a pseudo-terminal for TUIs) that keeps its own
// conversation. Each run writes the prompt as one line and streams output lines until `idleTimeoutMs` of
// silence (complete, detail `idle-timeout`). Cancel interrupts the turn (SIGINT / Ctrl-C) and keeps the process;
// the run deadline and `close` kill the whole tree. Output between runs belongs to no run and is dropped.
import { systemClock } from '@iop/clock';
import type { RunEventPart } from '@iop/wire';
import type { LogicalSession } from '../../sessions/session-registry.js';
import { stripAnsi } from './ansi.js';
import { CliAdapterError } from './errors.js';
import { LineSplitter, LineTooLongError } from '../line-splitter.js';
import { OutputFlow } from './output-flow.js';
import type { LaunchedProcess, ProcessExit } from './process-launcher.js';
import { toSingleLine, toTerminalText } from './prompt.js';
import {
  cancelledReason,
  completePart,
  describeExit,
  errorPart,
  TextTail,
  type SessionRun,
  type SessionServices,
  type SessionSetup,
} from './session-context.js';
import { runSessionQueue, type SessionRunSteps } from './session-run-loop.js';
import { WaitableQueue } from './waitable-queue.js';

const INTERRUPT_SETTLE_MS = 250;
/** A TUI ignores keys typed while it still draws its first screen: wait until it has been quiet this long. */
const TERMINAL_STARTUP_QUIET_MS = 1000;
const TERMINAL_STARTUP_MAX_MS = 20_000;
/** Enter sent together with the text reads as a pasted newline in TUIs: it goes separately, a moment later. */
const TERMINAL_ENTER_DELAY_MS = 200;

type WorkerEvent =
  | { kind: 'line'; text: string }
  | { kind: 'exit'; exit: ProcessExit }
  | { kind: 'line-too-long'; limit: number };

export class PersistentSession implements LogicalSession {
  readonly mode = 'persistent' as const;
  private process: LaunchedProcess | undefined;
  private exit: ProcessExit | undefined;
  private listener: ((event: WorkerEvent) => void) | undefined;
  private readonly splitter = new LineSplitter();
  private readonly stderr = new TextTail();
  private running = false;
  /** Output flow control of the run in progress (the process is paused while its lines wait unread). */
  private flow: OutputFlow | undefined;
  /** After an interrupt, the next prompt waits until then: the signal is handled asynchronously by the CLI and
   * must not cancel the next turn too. */
  private settleUntil = 0;
  private lastOutputAt = 0;
  private startedAt = 0;
  private closing: Promise<void> | undefined;

  /** `onGone` is told when the process is gone for good, so the adapter forgets this session. */
  constructor(
    private readonly setup: SessionSetup,
    private readonly services: SessionServices,
    private readonly onGone: (session: PersistentSession) => void,
  ) {}

  get busy(): boolean {
    return this.running;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Starts the process on first use (persistent-lazy and persistent both start with the session's first run). */
  private ensureStarted(): LaunchedProcess {
    if (this.closing) throw new CliAdapterError('adapter_closed', 'session is closing');
    if (this.exit)
      throw new CliAdapterError('process_exited', `CLI process ended (${describeExit(this.exit)})`);
    if (this.process) return this.process;
    const { profile } = this.setup;
    const launched = this.services.launcher.launch({
      command: profile.command,
      args: profile.args,
      cwd: this.setup.workspace,
      env: this.setup.env,
      terminal: profile.terminal,
      stdin: 'pipe',
    });
    this.process = launched;
    this.startedAt = this.services.now();
    launched.onOutput((chunk, stream) => {
      this.lastOutputAt = this.services.now();
      if (stream === 'stderr') {
        this.stderr.push(chunk);
        return;
      }
      let lines: string[];
      try {
        lines = this.splitter.push(chunk);
      } catch (error) {
        if (!(error instanceof LineTooLongError)) throw error;
        this.listener?.({ kind: 'line-too-long', limit: error.limit });
        return;
      }
      for (const line of lines) this.emitLine(line);
      this.flow?.afterPush();
    });
    void launched.exited.then((exit) => {
      this.exit = exit;
      const rest = this.splitter.flush();
      if (rest !== undefined) this.emitLine(rest);
      this.listener?.({ kind: 'exit', exit });
      this.services.logger.info(
        {
          target: this.setup.target,
          session: this.setup.sessionId,
          pid: launched.pid,
          exit: describeExit(exit),
        },
        'persistent CLI process ended',
      );
      this.onGone(this);
    });
    this.services.logger.info(
      {
        target: this.setup.target,
        session: this.setup.sessionId,
        pid: launched.pid,
        terminal: profile.terminal,
      },
      'persistent CLI process started',
    );
    return launched;
  }

  private emitLine(raw: string): void {
    const text = this.setup.profile.terminal ? stripAnsi(raw) : raw;
    // A terminal repaints with blank lines and cursor moves: only lines with visible text carry output.
    if (this.setup.profile.terminal && text.trim() === '') return;
    this.listener?.({ kind: 'line', text });
  }

  async *run(run: SessionRun): AsyncGenerator<RunEventPart> {
    if (this.running)
      throw new CliAdapterError('session_busy', `session ${this.setup.sessionId} already has a run`);
    this.running = true;
    const queue = new WaitableQueue<WorkerEvent>();
    const { now } = this.services;
    try {
      const launched = this.ensureStarted();
      this.listener = (event) => queue.push(event);
      this.flow = new OutputFlow(launched, queue);
      if (launched.pid === undefined) {
        const exit = await launched.exited;
        throw new CliAdapterError(
          'spawn_failed',
          `cannot start ${this.setup.profile.command}: ${exit.spawnError ?? ''}`,
        );
      }
      const settle = this.settleUntil - now();
      if (settle > 0)
        await new Promise<void>((resolve) => systemClock.setTimeout(resolve, settle, { keepAlive: true }));
      if (launched.terminal) {
        await this.waitForQuietTerminal(run.signal);
        launched.write(toTerminalText(run.prompt));
        await new Promise<void>((resolve) =>
          systemClock.setTimeout(resolve, TERMINAL_ENTER_DELAY_MS, { keepAlive: true }),
        );
        launched.write('\r');
      } else {
        launched.write(`${toSingleLine(run.prompt)}\n`);
      }
      yield* runSessionQueue(queue, run.signal, this.turnSteps(run, launched, this.flow));
    } finally {
      this.listener = undefined;
      // Output between runs belongs to no run and is dropped: never leave the process paused.
      if (this.flow?.isPaused) this.process?.resume();
      this.flow = undefined;
      this.running = false;
    }
  }

  /** What a turn's queue events mean for a persistent CLI: lines until `idleTimeoutMs` of silence. */
  private turnSteps(
    run: SessionRun,
    launched: LaunchedProcess,
    flow: OutputFlow,
  ): SessionRunSteps<WorkerEvent> {
    const { now } = this.services;
    const idleTimeoutMs = this.setup.profile.idleTimeoutMs;
    let lastActivity = now();
    return {
      waitMs: () => {
        const current = now();
        return Math.min(lastActivity + idleTimeoutMs - current, run.deadlineAt - current);
      },
      afterTake: () => flow.afterTake(),
      elapsedMs: () => now() - run.startedAt,
      item: (event) => {
        if (event.kind === 'line') lastActivity = now();
        return this.onWorkerEvent(run, event);
      },
      aborted: () => this.onAborted(run, launched),
      timeout: () => this.onTimeout(run),
    };
  }

  /** A line of the turn's output; an overlong line or the process's exit ends the turn (true). */
  private async *onWorkerEvent(run: SessionRun, event: WorkerEvent): AsyncGenerator<RunEventPart, boolean> {
    const { now } = this.services;
    if (event.kind === 'line') {
      yield { type: 'text-delta', text: `${event.text}\n` };
      return false;
    }
    if (event.kind === 'line-too-long') {
      await this.close('output-line-too-long');
      yield errorPart(
        'output_line_too_long',
        `the CLI printed an output line longer than ${event.limit} characters; the session was terminated`,
        false,
        now() - run.startedAt,
      );
      return true;
    }
    const backendMs = now() - run.startedAt;
    if (event.exit.exitCode === 0) {
      yield completePart('exit', backendMs);
    } else {
      const stderr = this.stderr.toString();
      yield errorPart(
        'process_exited',
        `CLI process ended (${describeExit(event.exit)})${stderr ? `: ${stderr}` : ''}`,
        true,
        backendMs,
      );
    }
    return true;
  }

  private onAborted(run: SessionRun, launched: LaunchedProcess): RunEventPart[] {
    // Interrupt the turn and keep the session: the process and its conversation live on.
    launched.interrupt();
    this.settleUntil = this.services.now() + INTERRUPT_SETTLE_MS;
    return [{ type: 'cancelled', reason: cancelledReason(run.signal) }];
  }

  /** The deadline kills the session; silence for `idleTimeoutMs` completes the turn. */
  private async *onTimeout(run: SessionRun): AsyncGenerator<RunEventPart, void> {
    const { now } = this.services;
    if (now() >= run.deadlineAt) {
      this.services.logger.warn(
        { target: this.setup.target, session: this.setup.sessionId, run_id: run.runId },
        'run deadline exceeded; killing the session process tree',
      );
      await this.close('deadline');
      yield errorPart(
        'deadline_exceeded',
        'run deadline exceeded; the session was terminated',
        false,
        now() - run.startedAt,
      );
      return;
    }
    const rest = this.splitter.flush();
    if (rest !== undefined) {
      const text = this.setup.profile.terminal ? stripAnsi(rest) : rest;
      if (!this.setup.profile.terminal || text.trim() !== '') yield { type: 'text-delta', text: `${text}\n` };
    }
    yield completePart('idle-timeout', now() - run.startedAt);
  }

  /** Waits (bounded) until a freshly started TUI has drawn its screen and gone quiet; output so far is dropped. */
  private async waitForQuietTerminal(signal: AbortSignal): Promise<void> {
    const { now } = this.services;
    while (!signal.aborted && !this.exit && now() - this.startedAt < TERMINAL_STARTUP_MAX_MS) {
      const quietFor = now() - Math.max(this.lastOutputAt, this.startedAt);
      if (this.lastOutputAt > 0 && quietFor >= TERMINAL_STARTUP_QUIET_MS) return;
      if (this.lastOutputAt === 0 && now() - this.startedAt >= TERMINAL_STARTUP_QUIET_MS * 3) return;
      await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 50, { keepAlive: true }));
    }
  }

  /** Kills the whole process tree (SIGTERM, then SIGKILL after the grace period). Idempotent. */
  close(reason: string): Promise<void> {
    this.closing ??= (async () => {
      const launched = this.process;
      if (!launched || launched.pid === undefined || this.exit) return;
      this.services.logger.info(
        { target: this.setup.target, session: this.setup.sessionId, pid: launched.pid, reason },
        'terminating persistent CLI process tree',
      );
      await this.services.tree.terminate(launched.pid, this.services.killGraceMs);
      await Promise.race([
        launched.exited,
        new Promise<void>((resolve) => systemClock.setTimeout(resolve, 2000)),
      ]);
    })();
    return this.closing;
  }
}
