// A one-shot session: every run starts the CLI once (`claude -p`, `codex exec`, `cline --json`, `agy --print`,
// plain text CLIs), parses its stdout with the profile's output format and ends when the process exits. The
// session remembers the CLI's conversation id, so later runs use `resume_args` ({session_id} and friends).
// Watchdogs: the run deadline and cancel kill the process tree; after the CLI printed its final result it gets
// `resultGraceMs` to exit before its tree is killed and the run completes normally.
import type { RunEventPart } from '@iop/wire';
import type { LogicalSession } from '../../sessions/session-registry.js';
import { stripAnsi } from './ansi.js';
import { CliAdapterError } from './errors.js';
import { LineSplitter, LineTooLongError } from '../line-splitter.js';
import { OutputFlow } from './output-flow.js';
import {
  createOutputParser,
  type OutputParser,
  type ParsedOutput,
  type ParserState,
} from './output-parser.js';
import { expandArgs, expandEnv, usesBackendSessionId, usesPlaceholder } from './placeholders.js';
import { toTerminalText } from './prompt.js';
import type { LaunchedProcess, ProcessExit } from './process-launcher.js';
import {
  cancelledReason,
  completePart,
  describeExit,
  errorPart,
  TextTail,
  type TerminalPart,
  type RateLimitObserver,
  type SessionRun,
  type SessionServices,
  type SessionSetup,
} from './session-context.js';
import { runSessionQueue, type SessionRunSteps } from './session-run-loop.js';
import { WaitableQueue } from './waitable-queue.js';

type ProcessEvent =
  | { kind: 'line'; text: string }
  | { kind: 'exit'; exit: ProcessExit }
  | { kind: 'line-too-long'; limit: number };

/** How one run invokes the CLI. */
interface Invocation {
  args: string[];
  env: Record<string, string>;
  resuming: boolean;
  /** The prompt is an argument (`{prompt}`), so stdin is not used for it. */
  promptInArgs: boolean;
}

/** One run's state: its queue of process events and what the CLI has said so far. */
interface OneShotTurn {
  run: SessionRun;
  queue: WaitableQueue<ProcessEvent>;
  stderr: TextTail;
  parser: OutputParser;
  flow?: OutputFlow;
  launched: LaunchedProcess | undefined;
  /** The process is gone (exited or killed): nothing left to kill in `finally`. */
  exited: boolean;
  /** When the CLI printed its final result (the result grace runs from here). */
  resultSeenAt: number | undefined;
  failure: ParsedOutput['failure'];
}

export class OneShotSession implements LogicalSession {
  readonly mode = 'oneshot' as const;
  /** The CLI's own conversation id (claude session id, codex thread id, agy conversation id). */
  backendSessionId: string | undefined;
  /** Completed runs; resume_args apply from the second run on. */
  turns = 0;
  private readonly parserState: ParserState = {};
  private current: LaunchedProcess | undefined;
  private running = false;
  private closed = false;

  constructor(
    private readonly setup: SessionSetup,
    private readonly services: SessionServices,
    private readonly onRateLimit: RateLimitObserver,
  ) {}

  get busy(): boolean {
    return this.running;
  }

  async *run(run: SessionRun): AsyncGenerator<RunEventPart> {
    if (this.closed) throw new CliAdapterError('adapter_closed', 'session is closed');
    if (this.running)
      throw new CliAdapterError('session_busy', `session ${this.setup.sessionId} already has a run`);
    const { profile } = this.setup;
    const invocation = this.invocation(run);
    this.running = true;
    const turn: OneShotTurn = {
      run,
      queue: new WaitableQueue<ProcessEvent>(),
      stderr: new TextTail(),
      parser: createOutputParser(profile.outputFormat, this.parserState),
      launched: undefined,
      exited: false,
      resultSeenAt: undefined,
      failure: undefined,
    };
    try {
      const launched = this.launch(turn, invocation);
      if (!invocation.promptInArgs) {
        // The prompt goes on stdin, then end-of-input (claude -p, opencode run read it that way).
        launched.write(profile.terminal ? `${toTerminalText(run.prompt)}\r` : run.prompt);
        launched.endInput();
      }
      yield* runSessionQueue(turn.queue, run.signal, this.turnSteps(turn, launched));
    } finally {
      // A consumer that stopped early (or a thrown error) must not leave the CLI running.
      if (turn.launched && !turn.exited) await this.killCurrent(turn.launched);
      this.current = undefined;
      this.running = false;
    }
  }

  /** The run's arguments and environment: resume_args from the second run on, placeholders filled. */
  private invocation(run: SessionRun): Invocation {
    const { profile } = this.setup;
    const resuming = this.turns > 0 && this.backendSessionId !== undefined && profile.resumeArgs.length > 0;
    const template = resuming ? resumeTemplate(profile.args, profile.resumeArgs) : profile.args;
    // A CLI that takes its conversation id from us (claude --session-id) gets a fresh one on the first run.
    if (this.backendSessionId === undefined && usesBackendSessionId(template)) {
      this.backendSessionId = this.services.randomId();
    }
    const args = expandArgs(template, {
      prompt: run.prompt,
      backendSessionId: this.backendSessionId ?? '',
      iopSession: this.setup.sessionId,
      workspace: this.setup.workspace,
      runId: run.runId,
      model: run.model,
    });
    // The model endpoint is the run's own: filled per run (the session's env is the profile's as written).
    const env = run.model ? expandEnv(this.setup.env, run.model) : this.setup.env;
    return { args, env, resuming, promptInArgs: usesPlaceholder(template, 'prompt') };
  }

  /** Starts the CLI and feeds its stdout lines (and its exit) into the turn's queue. */
  private launch(turn: OneShotTurn, invocation: Invocation): LaunchedProcess {
    const { profile } = this.setup;
    const { queue, stderr } = turn;
    const launched = this.services.launcher.launch({
      command: profile.command,
      args: invocation.args,
      cwd: this.setup.workspace,
      env: invocation.env,
      terminal: profile.terminal,
      stdin: invocation.promptInArgs && !profile.terminal ? 'ignore' : 'pipe',
    });
    turn.launched = launched;
    this.current = launched;
    const splitter = new LineSplitter();
    const clean = (line: string) => (profile.terminal ? stripAnsi(line) : line);
    const flow = new OutputFlow(launched, queue);
    turn.flow = flow;
    let overflowed = false;
    launched.onOutput((chunk, stream) => {
      if (stream === 'stderr') {
        stderr.push(chunk);
        return;
      }
      if (overflowed) return;
      let lines: string[];
      try {
        lines = splitter.push(chunk);
      } catch (error) {
        if (!(error instanceof LineTooLongError)) throw error;
        overflowed = true;
        launched.pause();
        queue.push({ kind: 'line-too-long', limit: error.limit });
        return;
      }
      for (const line of lines) queue.push({ kind: 'line', text: clean(line) });
      flow.afterPush();
    });
    void launched.exited.then((exit) => {
      const rest = splitter.flush();
      if (rest !== undefined) queue.push({ kind: 'line', text: clean(rest) });
      queue.push({ kind: 'exit', exit });
    });
    this.services.logger.debug(
      {
        target: this.setup.target,
        session: this.setup.sessionId,
        run_id: turn.run.runId,
        pid: launched.pid,
        resuming: invocation.resuming,
      },
      'one-shot CLI started',
    );
    return launched;
  }

  /** What the turn's queue events mean for a one-shot CLI. */
  private turnSteps(turn: OneShotTurn, launched: LaunchedProcess): SessionRunSteps<ProcessEvent> {
    const { run } = turn;
    const { now } = this.services;
    return {
      waitMs: () => {
        const current = now();
        const wait = run.deadlineAt - current;
        if (turn.resultSeenAt === undefined) return wait;
        return Math.min(wait, turn.resultSeenAt + this.setup.profile.resultGraceMs - current);
      },
      afterTake: () => turn.flow?.afterTake(),
      elapsedMs: () => now() - run.startedAt,
      item: (event) => this.onProcessEvent(turn, launched, event),
      aborted: () => this.onAborted(turn, launched),
      timeout: () => this.onTimeout(turn, launched),
    };
  }

  /** What the CLI printed, or its exit; true when the run is over. */
  private async *onProcessEvent(
    turn: OneShotTurn,
    launched: LaunchedProcess,
    event: ProcessEvent,
  ): AsyncGenerator<RunEventPart, boolean, undefined> {
    if (event.kind === 'line') {
      yield* this.absorb(turn, turn.parser.line(event.text));
      return false;
    }
    if (event.kind === 'line-too-long') {
      await this.killTurn(turn, launched);
      yield errorPart(
        'output_line_too_long',
        `the CLI printed an output line longer than ${event.limit} characters; the run was stopped and its process tree killed`,
        false,
        this.services.now() - turn.run.startedAt,
      );
      return true;
    }
    turn.exited = true;
    yield* this.absorb(turn, turn.parser.end());
    yield this.exitPart(turn, launched, event.exit, this.services.now() - turn.run.startedAt);
    return true;
  }

  private async *onAborted(turn: OneShotTurn, launched: LaunchedProcess): AsyncGenerator<RunEventPart, void> {
    await this.killTurn(turn, launched);
    yield { type: 'cancelled', reason: cancelledReason(turn.run.signal) };
  }

  /** The deadline, or the result grace after the final result, passed. */
  private async *onTimeout(turn: OneShotTurn, launched: LaunchedProcess): AsyncGenerator<RunEventPart, void> {
    const { run } = turn;
    const { now } = this.services;
    await this.killTurn(turn, launched);
    const backendMs = now() - run.startedAt;
    if (turn.resultSeenAt !== undefined && now() < run.deadlineAt) {
      // The known `claude -p` failure mode: final result printed, process still alive.
      this.services.logger.warn(
        { target: this.setup.target, session: this.setup.sessionId, run_id: run.runId },
        'CLI printed its result but did not exit; killed after the grace period',
      );
      yield* this.absorb(turn, turn.parser.end());
      this.turns += 1;
      yield completePart('result', backendMs);
    } else {
      yield errorPart(
        'deadline_exceeded',
        'run deadline exceeded; the CLI process tree was killed',
        false,
        backendMs,
      );
    }
  }

  /** Takes in what the parser learnt (conversation id, usage limits, failure, final result); its parts. */
  private absorb(turn: OneShotTurn, parsed: ParsedOutput): RunEventPart[] {
    if (parsed.backendSessionId) this.backendSessionId = parsed.backendSessionId;
    if (parsed.rateLimit) this.onRateLimit(this.setup.target, parsed.rateLimit);
    if (parsed.failure) turn.failure = parsed.failure;
    if (parsed.final && turn.resultSeenAt === undefined) turn.resultSeenAt = this.services.now();
    return parsed.parts;
  }

  private async killTurn(turn: OneShotTurn, launched: LaunchedProcess): Promise<void> {
    await this.killCurrent(launched);
    turn.exited = true;
  }

  /** The last part of a run whose CLI exited. */
  private exitPart(
    turn: OneShotTurn,
    launched: LaunchedProcess,
    exit: ProcessExit,
    backendMs: number,
  ): TerminalPart {
    if (exit.spawnError !== undefined && launched.pid === undefined) {
      return errorPart(
        'spawn_failed',
        `cannot start ${this.setup.profile.command}: ${exit.spawnError}`,
        false,
        backendMs,
      );
    }
    if (turn.failure) return errorPart(turn.failure.code, turn.failure.message, false, backendMs);
    if (turn.resultSeenAt !== undefined || exit.exitCode === 0) {
      this.turns += 1;
      return completePart(turn.resultSeenAt !== undefined ? 'result' : 'exit', backendMs);
    }
    const tail = turn.stderr.toString();
    return errorPart('cli_failed', `CLI ${describeExit(exit)}${tail ? `: ${tail}` : ''}`, true, backendMs);
  }

  private async killCurrent(launched: LaunchedProcess): Promise<void> {
    if (launched.pid === undefined) return;
    await this.services.tree.terminate(launched.pid, this.services.killGraceMs);
  }

  /** Kills a run in progress; the remembered conversation id is dropped with the session. Idempotent. */
  async close(reason: string): Promise<void> {
    this.closed = true;
    const launched = this.current;
    if (launched?.pid !== undefined) {
      this.services.logger.info(
        { target: this.setup.target, session: this.setup.sessionId, pid: launched.pid, reason },
        'terminating one-shot CLI process tree',
      );
      await this.killCurrent(launched);
    }
  }
}

/**
 * The argument list of a resumed run. `resume_args` is a complete list when it names `{prompt}` or begins like
 * `args` (same first argument, e.g. `exec` or `-p`); otherwise it is extra flags appended to `args`
 * (`['--resume', '{session_id}']` after `claude -p ...`).
 */
export function resumeTemplate(args: readonly string[], resumeArgs: readonly string[]): string[] {
  const complete = usesPlaceholder(resumeArgs, 'prompt') || (args.length > 0 && resumeArgs[0] === args[0]);
  return complete ? [...resumeArgs] : [...args, ...resumeArgs];
}
