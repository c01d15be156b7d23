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
import { createOutputParser, type ParsedOutput, type ParserState } from './output-parser.js';
import { expandArgs, expandEnv, usesBackendSessionId, usesPlaceholder } from './placeholders.js';
import { toTerminalText } from './prompt.js';
import type { LaunchedProcess, ProcessExit } from './process-launcher.js';
import {
  cancelledReason,
  completePart,
  describeExit,
  errorPart,
  TextTail,
  type RateLimitObserver,
  type SessionRun,
  type SessionServices,
  type SessionSetup,
} from './session-context.js';
import { WaitableQueue } from './waitable-queue.js';

type ProcessEvent =
  | { kind: 'line'; text: string }
  | { kind: 'exit'; exit: ProcessExit }
  | { kind: 'line-too-long'; limit: number };

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
    const { now } = this.services;
    const resuming = this.turns > 0 && this.backendSessionId !== undefined && profile.resumeArgs.length > 0;
    const template = resuming ? resumeTemplate(profile.args, profile.resumeArgs) : profile.args;
    // A CLI that takes its conversation id from us (claude --session-id) gets a fresh one on the first run.
    if (this.backendSessionId === undefined && usesBackendSessionId(template)) {
      this.backendSessionId = this.services.randomId();
    }
    const promptInArgs = usesPlaceholder(template, 'prompt');
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
    this.running = true;
    const queue = new WaitableQueue<ProcessEvent>();
    const splitter = new LineSplitter();
    const stderr = new TextTail();
    const parser = createOutputParser(profile.outputFormat, this.parserState);
    let launched: LaunchedProcess | undefined;
    let exited = false;
    try {
      launched = this.services.launcher.launch({
        command: profile.command,
        args,
        cwd: this.setup.workspace,
        env,
        terminal: profile.terminal,
        stdin: promptInArgs && !profile.terminal ? 'ignore' : 'pipe',
      });
      this.current = launched;
      const clean = (line: string) => (profile.terminal ? stripAnsi(line) : line);
      const flow = new OutputFlow(launched, queue);
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
          launched?.pause();
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
          run_id: run.runId,
          pid: launched.pid,
          resuming,
        },
        'one-shot CLI started',
      );
      if (!promptInArgs) {
        // The prompt goes on stdin, then end-of-input (claude -p, opencode run read it that way).
        launched.write(profile.terminal ? `${toTerminalText(run.prompt)}\r` : run.prompt);
        launched.endInput();
      }
      let resultSeenAt: number | undefined;
      let failure: ParsedOutput['failure'];
      const absorb = function* (this: OneShotSession, parsed: ParsedOutput): Generator<RunEventPart> {
        if (parsed.backendSessionId) this.backendSessionId = parsed.backendSessionId;
        if (parsed.rateLimit) this.onRateLimit(this.setup.target, parsed.rateLimit);
        if (parsed.failure) failure = parsed.failure;
        if (parsed.final && resultSeenAt === undefined) resultSeenAt = now();
        yield* parsed.parts;
      }.bind(this);
      for (;;) {
        const current = now();
        let wait = run.deadlineAt - current;
        if (resultSeenAt !== undefined) wait = Math.min(wait, resultSeenAt + profile.resultGraceMs - current);
        const taken = await queue.take(Math.max(0, wait), run.signal);
        flow.afterTake();
        switch (taken.kind) {
          case 'item': {
            const event = taken.item;
            if (event.kind === 'line') {
              yield* absorb(parser.line(event.text));
              break;
            }
            if (event.kind === 'line-too-long') {
              await this.killCurrent(launched);
              exited = true;
              yield errorPart(
                'output_line_too_long',
                `the CLI printed an output line longer than ${event.limit} characters; the run was stopped and its process tree killed`,
                false,
                now() - run.startedAt,
              );
              return;
            }
            exited = true;
            yield* absorb(parser.end());
            const backendMs = now() - run.startedAt;
            if (event.exit.spawnError !== undefined && launched.pid === undefined) {
              yield errorPart(
                'spawn_failed',
                `cannot start ${profile.command}: ${event.exit.spawnError}`,
                false,
                backendMs,
              );
            } else if (failure) {
              yield errorPart(failure.code, failure.message, false, backendMs);
            } else if (resultSeenAt !== undefined || event.exit.exitCode === 0) {
              this.turns += 1;
              yield completePart(resultSeenAt !== undefined ? 'result' : 'exit', backendMs);
            } else {
              const tail = stderr.toString();
              yield errorPart(
                'cli_failed',
                `CLI ${describeExit(event.exit)}${tail ? `: ${tail}` : ''}`,
                true,
                backendMs,
              );
            }
            return;
          }
          case 'aborted':
            await this.killCurrent(launched);
            exited = true;
            yield { type: 'cancelled', reason: cancelledReason(run.signal) };
            return;
          case 'timeout': {
            await this.killCurrent(launched);
            exited = true;
            const backendMs = now() - run.startedAt;
            if (resultSeenAt !== undefined && now() < run.deadlineAt) {
              // The known `claude -p` failure mode: final result printed, process still alive.
              this.services.logger.warn(
                { target: this.setup.target, session: this.setup.sessionId, run_id: run.runId },
                'CLI printed its result but did not exit; killed after the grace period',
              );
              yield* absorb(parser.end());
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
            return;
          }
          case 'closed':
            yield errorPart('internal', 'run queue closed unexpectedly', false, now() - run.startedAt);
            return;
          default: {
            const unreachable: never = taken;
            throw new Error(`unexpected queue result ${JSON.stringify(unreachable)}`);
          }
        }
      }
    } finally {
      // A consumer that stopped early (or a thrown error) must not leave the CLI running.
      if (launched && !exited) await this.killCurrent(launched);
      this.current = undefined;
      this.running = false;
    }
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
