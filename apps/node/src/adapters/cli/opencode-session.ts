// An opencode session (mode `opencode-sse`): one `opencode serve` per IOP session on a free loopback port, one
// opencode session created over HTTP, and one `/event` SSE subscription. A run posts the prompt with
// `prompt_async`, streams `message.part.delta` text of our session, reports tool parts, and completes on
// `session.idle`. Cancel = `POST /session/{id}/abort` (the server and its conversation stay); the run deadline
// and `close` kill the server's process tree.
//
// The server is started once per session, by whichever run comes first, but not on that run's behalf: a caller
// that cancels while it starts only stops waiting, and the next run uses the same start. A start that fails
// (server exited, no health answer in time, no session id) kills the server's process tree and forgets the
// session, so the next run starts afresh. Each server requires HTTP basic auth with a random password that only
// this process knows (OPENCODE_SERVER_USERNAME/PASSWORD), so other local users cannot drive it.
//
// Profile args are kept as configured: `--model provider/model`, `--agent`, `--title` and
// `--dangerously-skip-permissions` configure the HTTP session (serve itself refuses them); `serve`, `--port`
// (each worker takes a free port) and `--hostname` are handled here; all other args go to `opencode serve`.
import { systemClock } from '@iop/clock';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { RunEventPart } from '@iop/wire';
import type { LogicalSession } from '../../sessions/session-registry.js';
import { CliAdapterError } from './errors.js';
import { isObject, objectField, parseJsonLine, stringField, type JsonObject } from './output/json-line.js';
import type { LaunchedProcess, ProcessExit } from './process-launcher.js';
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
import { readSse } from '../http/sse-reader.js';
import { runSessionQueue, type SessionRunSteps } from './session-run-loop.js';
import { WaitableQueue } from './waitable-queue.js';

export interface OpencodeOptions {
  /** Interface the server binds and we connect to (loopback unless configured). */
  hostname: string;
  model?: { providerID: string; modelID: string };
  agent?: string;
  title: string;
  autoApprove: boolean;
  serveArgs: string[];
}

/** Splits profile args into HTTP session options and `opencode serve` args. */
export function parseOpencodeArgs(args: readonly string[]): OpencodeOptions {
  const options: OpencodeOptions = { hostname: '127.0.0.1', title: 'iop', autoApprove: false, serveArgs: [] };
  for (let index = 0; index < args.length; index += 1) {
    const argument = args[index] ?? '';
    const [flag, inline] = argument.includes('=')
      ? [argument.slice(0, argument.indexOf('=')), argument.slice(argument.indexOf('=') + 1)]
      : [argument, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      index += 1;
      return args[index] ?? '';
    };
    switch (flag) {
      case 'serve':
        break;
      case '--port':
        // Every session worker gets its own free port: a configured port is not usable more than once.
        value();
        break;
      case '--hostname':
        options.hostname = value();
        break;
      case '--model':
      case '-m': {
        const model = value();
        const slash = model.indexOf('/');
        if (slash <= 0)
          throw new CliAdapterError(
            'invalid_profile',
            `opencode --model must be provider/model, got "${model}"`,
          );
        options.model = { providerID: model.slice(0, slash), modelID: model.slice(slash + 1) };
        break;
      }
      case '--agent':
        options.agent = value();
        break;
      case '--title':
        options.title = value();
        break;
      case '--dangerously-skip-permissions':
        options.autoApprove = true;
        break;
      default:
        options.serveArgs.push(argument);
    }
  }
  return options;
}

type ServerEvent =
  { kind: 'event'; event: JsonObject } | { kind: 'exit'; exit: ProcessExit } | { kind: 'stream-ended' };

/** One run's view of the server's events: our opencode session, and the tool calls and messages seen so far. */
interface OpencodeTurn {
  ours: string;
  announcedTools: Set<string>;
  finishedTools: Set<string>;
  messageRoles: Map<string, string>;
}

export class OpencodeSession implements LogicalSession {
  readonly mode = 'persistent' as const;
  private process: LaunchedProcess | undefined;
  private baseUrl = '';
  private opencodeSessionId = '';
  private starting: Promise<void> | undefined;
  private listener: ((event: ServerEvent) => void) | undefined;
  private readonly events = new AbortController();
  private readonly stderr = new TextTail();
  private readonly options: OpencodeOptions;
  private running = false;
  private closing: Promise<void> | undefined;
  private exit: ProcessExit | undefined;
  /** Ends a start in progress (close()); never a caller's signal. */
  private readonly startAbort = new AbortController();
  private readonly authorization: string;
  private readonly password = randomBytes(24).toString('base64url');

  constructor(
    private readonly setup: SessionSetup,
    private readonly services: SessionServices,
    private readonly onGone: (session: OpencodeSession) => void,
    private readonly startupTimeoutMs = 30_000,
  ) {
    this.options = parseOpencodeArgs(setup.profile.args);
    this.authorization = `Basic ${Buffer.from(`${OPENCODE_USERNAME}:${this.password}`).toString('base64')}`;
  }

  get busy(): boolean {
    return this.running;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** The one start of this session's server (shared by every caller); a failed start forgets the session. */
  private start(): Promise<void> {
    this.starting ??= this.startServer().catch(async (error: unknown) => {
      await this.abandonStart(error);
      throw error;
    });
    // Every caller may have stopped waiting: the failure is handled (logged, session forgotten) regardless.
    this.starting.catch(() => undefined);
    return this.starting;
  }

  /** After a failed start: kill whatever was started and let the adapter forget this session. */
  private async abandonStart(error: unknown): Promise<void> {
    this.services.logger.warn(
      {
        target: this.setup.target,
        session: this.setup.sessionId,
        pid: this.process?.pid,
        error: error instanceof Error ? error.message : String(error),
      },
      'opencode server start failed; killing it and forgetting the session',
    );
    this.events.abort();
    const launched = this.process;
    if (launched?.pid !== undefined && !this.exit) {
      await this.services.tree.terminate(launched.pid, this.services.killGraceMs);
    }
    this.onGone(this);
  }

  private async startServer(): Promise<void> {
    const signal = this.startAbort.signal;
    const port = await findFreePort();
    const { profile } = this.setup;
    const launched = this.services.launcher.launch({
      command: profile.command,
      args: ['serve', '--hostname', this.options.hostname, '--port', String(port), ...this.options.serveArgs],
      cwd: this.setup.workspace,
      env: {
        ...this.setup.env,
        OPENCODE_SERVER_USERNAME: OPENCODE_USERNAME,
        OPENCODE_SERVER_PASSWORD: this.password,
      },
      terminal: false,
      stdin: 'ignore',
    });
    this.process = launched;
    launched.onOutput((chunk) => this.stderr.push(chunk));
    void launched.exited.then((exit) => {
      this.exit = exit;
      this.events.abort();
      this.listener?.({ kind: 'exit', exit });
      this.onGone(this);
    });
    const host = this.options.hostname === '0.0.0.0' ? '127.0.0.1' : this.options.hostname;
    this.baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const deadline = this.services.now() + this.startupTimeoutMs;
    for (;;) {
      if (this.exit) {
        throw new CliAdapterError(
          'spawn_failed',
          `opencode serve ended (${describeExit(this.exit)}): ${this.stderr.toString()}`,
        );
      }
      if (signal.aborted)
        throw new CliAdapterError('adapter_closed', 'the session closed while opencode serve was starting');
      try {
        const response = await this.services.fetch(`${this.baseUrl}/global/health`, {
          headers: { authorization: this.authorization },
          signal: AbortSignal.timeout(1000),
        });
        if (response.ok) break;
      } catch {
        // Not listening yet.
      }
      if (this.services.now() >= deadline) {
        throw new CliAdapterError(
          'backend_unreachable',
          `opencode serve did not answer on ${this.baseUrl} within ${this.startupTimeoutMs} ms`,
        );
      }
      await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 100, { keepAlive: true }));
    }
    const created = await this.post('/session', { title: this.options.title });
    this.opencodeSessionId = stringField(created, 'id') ?? '';
    if (!this.opencodeSessionId)
      throw new CliAdapterError('cli_error', 'opencode did not return a session id');
    await this.connectEvents();
    this.services.logger.info(
      {
        target: this.setup.target,
        session: this.setup.sessionId,
        pid: launched.pid,
        port,
        opencode_session: this.opencodeSessionId,
      },
      'opencode server started',
    );
  }

  /** Subscribes to /event and returns once the stream is open, so no event of the first prompt is missed. */
  private async connectEvents(): Promise<void> {
    const response = await this.services.fetch(`${this.baseUrl}/event`, {
      headers: { accept: 'text/event-stream', authorization: this.authorization },
      signal: this.events.signal,
    });
    if (!response.ok || !response.body) {
      throw new CliAdapterError('backend_unreachable', `opencode GET /event answered ${response.status}`);
    }
    void this.followEvents(response.body);
  }

  private async followEvents(body: ReadableStream<Uint8Array>): Promise<void> {
    try {
      for await (const message of readSse(body)) {
        const event = parseJsonLine(message.data);
        if (event) this.listener?.({ kind: 'event', event });
      }
    } catch (error) {
      if (!this.events.signal.aborted) {
        this.services.logger.warn(
          { target: this.setup.target, error: String(error) },
          'opencode event stream failed',
        );
      }
    }
    this.listener?.({ kind: 'stream-ended' });
  }

  private async post(path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const response = await this.services.fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: this.authorization },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    if (!response.ok)
      throw new CliAdapterError(
        'cli_error',
        `opencode ${path} answered ${response.status}: ${text.slice(0, 500)}`,
      );
    if (!text) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }

  async *run(run: SessionRun): AsyncGenerator<RunEventPart> {
    if (this.running)
      throw new CliAdapterError('session_busy', `session ${this.setup.sessionId} already has a run`);
    if (this.closing) throw new CliAdapterError('adapter_closed', 'session is closing');
    this.running = true;
    const queue = new WaitableQueue<ServerEvent>();
    try {
      if (!(await untilAborted(this.start(), run.signal))) {
        // This caller stops waiting; the start goes on for the next run of the session.
        yield { type: 'cancelled', reason: cancelledReason(run.signal) };
        return;
      }
      this.listener = (event) => queue.push(event);
      const ours = this.opencodeSessionId;
      const body: Record<string, unknown> = { parts: [{ type: 'text', text: run.prompt }] };
      if (this.options.model) body.model = this.options.model;
      if (this.options.agent) body.agent = this.options.agent;
      await this.post(`/session/${ours}/prompt_async`, body, run.signal);
      yield* runSessionQueue(queue, run.signal, this.turnSteps(run, ours));
    } finally {
      this.listener = undefined;
      this.running = false;
    }
  }

  /** What a turn's queue events mean for an opencode server: its events of our session until `session.idle`. */
  private turnSteps(run: SessionRun, ours: string): SessionRunSteps<ServerEvent> {
    const { now } = this.services;
    const elapsedMs = () => now() - run.startedAt;
    const turn: OpencodeTurn = {
      ours,
      announcedTools: new Set<string>(),
      finishedTools: new Set<string>(),
      messageRoles: new Map<string, string>(),
    };
    return {
      waitMs: () => run.deadlineAt - now(),
      elapsedMs,
      item: (item) => this.onServerEvent(run, turn, item),
      aborted: () => this.onAborted(run, ours),
      timeout: () => this.onDeadline(run),
    };
  }

  /** One server event; true when it ended the run (the server gone, our session idle or failed). */
  private async *onServerEvent(
    run: SessionRun,
    turn: OpencodeTurn,
    item: ServerEvent,
  ): AsyncGenerator<RunEventPart, boolean> {
    const elapsedMs = this.services.now() - run.startedAt;
    if (item.kind === 'exit') {
      yield errorPart('process_exited', `opencode serve ended (${describeExit(item.exit)})`, true, elapsedMs);
      return true;
    }
    if (item.kind === 'stream-ended') {
      yield errorPart('backend_unreachable', 'opencode event stream ended', true, elapsedMs);
      return true;
    }
    const { event } = item;
    const properties = objectField(event, 'properties') ?? {};
    const sessionOf =
      stringField(properties, 'sessionID') ??
      stringField(objectField(properties, 'info'), 'sessionID') ??
      stringField(objectField(properties, 'part'), 'sessionID');
    if (sessionOf !== undefined && sessionOf !== turn.ours) return false;
    switch (stringField(event, 'type') ?? '') {
      case 'message.updated': {
        const info = objectField(properties, 'info');
        const id = stringField(info, 'id');
        const role = stringField(info, 'role');
        if (id && role) turn.messageRoles.set(id, role);
        return false;
      }
      case 'message.part.delta': {
        const messageId = stringField(properties, 'messageID');
        if (messageId && turn.messageRoles.get(messageId) === 'user') return false;
        const field = stringField(properties, 'field') ?? 'text';
        const delta = stringField(properties, 'delta');
        if (!delta) return false;
        if (field === 'text') yield { type: 'text-delta', text: delta };
        else if (field === 'reasoning') yield { type: 'reasoning-delta', text: delta };
        return false;
      }
      case 'message.part.updated':
        yield* toolParts(objectField(properties, 'part'), turn.announcedTools, turn.finishedTools);
        return false;
      case 'permission.asked':
      case 'permission.updated':
        yield* this.answerPermission(properties);
        return false;
      case 'session.error': {
        const error = objectField(properties, 'error');
        const message =
          stringField(objectField(error, 'data'), 'message') ??
          stringField(error, 'name') ??
          'opencode session error';
        if (stringField(error, 'name') === 'MessageAbortedError') return false;
        yield errorPart('cli_error', message, false, this.services.now() - run.startedAt);
        return true;
      }
      case 'session.idle':
        yield completePart('idle', this.services.now() - run.startedAt);
        return true;
      default:
        return false;
    }
  }

  /** Cancel aborts the turn on the server; the server and its conversation stay. */
  private async *onAborted(run: SessionRun, ours: string): AsyncGenerator<RunEventPart, void> {
    await this.post(`/session/${ours}/abort`, {}).catch((error: unknown) =>
      this.services.logger.warn({ target: this.setup.target, error: String(error) }, 'opencode abort failed'),
    );
    yield { type: 'cancelled', reason: cancelledReason(run.signal) };
  }

  private async *onDeadline(run: SessionRun): AsyncGenerator<RunEventPart, void> {
    await this.close('deadline');
    yield errorPart(
      'deadline_exceeded',
      'run deadline exceeded; the opencode server was terminated',
      false,
      this.services.now() - run.startedAt,
    );
  }

  private async *answerPermission(properties: JsonObject): AsyncGenerator<RunEventPart> {
    const id = stringField(properties, 'id');
    const sessionId = stringField(properties, 'sessionID') ?? this.opencodeSessionId;
    yield {
      type: 'progress',
      kind: 'log',
      message: `permission requested: ${stringField(properties, 'permission') ?? stringField(properties, 'type') ?? 'unknown'}`,
      fields: { auto_approve: String(this.options.autoApprove) },
    };
    if (!this.options.autoApprove || !id) return;
    await this.post(`/session/${sessionId}/permissions/${id}`, { response: 'always' }).catch(
      (error: unknown) =>
        this.services.logger.warn(
          { target: this.setup.target, error: String(error) },
          'opencode permission reply failed',
        ),
    );
  }

  /** Kills the server's process tree. Idempotent. */
  close(reason: string): Promise<void> {
    this.closing ??= (async () => {
      this.startAbort.abort();
      this.events.abort();
      const launched = this.process;
      if (!launched || launched.pid === undefined || this.exit) return;
      this.services.logger.info(
        { target: this.setup.target, session: this.setup.sessionId, pid: launched.pid, reason },
        'terminating opencode server process tree',
      );
      await this.services.tree.terminate(launched.pid, this.services.killGraceMs);
    })();
    return this.closing;
  }
}

function* toolParts(
  part: JsonObject | undefined,
  announced: Set<string>,
  finished: Set<string>,
): Generator<RunEventPart> {
  if (!part || stringField(part, 'type') !== 'tool') return;
  const callId = stringField(part, 'callID') ?? stringField(part, 'id') ?? '';
  const state = objectField(part, 'state');
  const status = stringField(state, 'status') ?? '';
  if (!announced.has(callId) && (status === 'running' || status === 'completed' || status === 'error')) {
    announced.add(callId);
    yield {
      type: 'tool-call',
      call: {
        id: callId,
        name: stringField(part, 'tool') ?? '',
        argumentsJson: JSON.stringify(objectField(state, 'input') ?? {}),
        index: 0,
      },
    };
  }
  if ((status === 'completed' || status === 'error') && !finished.has(callId)) {
    finished.add(callId);
    const output = stringField(state, 'output') ?? stringField(state, 'error') ?? '';
    yield { type: 'progress', kind: 'tool', message: output, fields: { tool_call_id: callId, status } };
  }
}

/** Basic-auth user name of every server (the password is what protects it). */
const OPENCODE_USERNAME = 'iop';

/** True once `work` resolved; false as soon as `signal` aborts (work goes on). Rejections pass through. */
async function untilAborted(work: Promise<void>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<false>((resolve) => {
    onAbort = () => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const done = work.then(() => true as const);
  done.catch(() => undefined);
  try {
    return await Promise.race([done, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = isObject(address) && typeof address.port === 'number' ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}
