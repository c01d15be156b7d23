// EdgeLink: the node's end of its one connection to the edge (the edge's end is apps/edge's NodeLink): dial,
// register, keep the link alive with heartbeats, dispatch the edge's messages to a handler, and reconnect after a
// lost link.
//
// Lifecycle (see link-state.ts): `run()` dials and registers (`connecting`); a rejection or a failed first
// connection ends the link at once. After a first registration a lost connection moves to `reconnecting`: an
// attempt every `retryIntervalMs`, at most `maxRetries`; success re-registers (`registered` again) without user
// action. `stop()` says Goodbye and ends the link. `run()` resolves with a LinkOutcome saying why the link
// ended; it never calls process.exit — the CLI maps the outcome to an exit code.
import {
  CLOSE_REASONS,
  envelope,
  identityChannelBinding,
  PROTOCOL_VERSION,
  RegisterRejectCode,
  signIdentityProof,
  type CancelRequest,
  type Envelope,
  type FramedConnection,
  type NodeCommandRequest,
  type NodeConfigRefreshRequest,
  type RegisterResponse,
  type RunKind,
  type RunRequest,
} from '@iop/wire';
import type { KeyObject } from 'node:crypto';
import type { Logger } from '@iop/logging';
import type { Outbound } from './outbound.js';
import { sleep, systemClock, type Clock, type ClockTimer } from '@iop/clock';
import type { ConnectFunction } from './dial.js';
import { LinkError } from './link-error.js';
import { LinkStateMachine, type LinkState } from './link-state.js';

/** The kind this agent registers as (`nodes[].agent_kind` on the edge). */
export const NODE_AGENT_KIND = 'iop-node';
export const DEFAULT_RETRY_INTERVAL_MS = 10_000;
export const DEFAULT_MAX_RETRIES = 10;
/**
 * Each wait between reconnect attempts is the interval ± this fraction of it (uniformly), so nodes that lost a
 * restarted edge at the same moment do not all knock in the same second.
 */
export const DEFAULT_RETRY_JITTER = 0.2;
/**
 * Exit status of a node the edge closed as `replaced` (another process registered with its identity). The service
 * units list it in `RestartPreventExitStatus=`, so a supervisor does not restart the node into a replace loop.
 */
export const EXIT_CODE_REPLACED = 3;
export const DEFAULT_REGISTER_TIMEOUT_MS = 10_000;
/** Used when the edge's register response leaves the heartbeat settings at 0. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;

/** Edge close reasons after which reconnecting would fight another process or a removed config. */
const FINAL_EDGE_REASONS: ReadonlySet<string> = new Set([CLOSE_REASONS.replaced, CLOSE_REASONS.nodeRemoved]);

/** The node's identity key pair (cli/node-identity.ts). */
export interface RegistrationIdentity {
  privateKey: KeyObject;
  /** DER SubjectPublicKeyInfo. */
  publicKeySpki: Buffer;
}

export interface RegistrationInfo {
  nodeId: string;
  token: string;
  /** Sent as identity_public_key; the edge's RegisterChallenge is answered with a signature by it. */
  identity?: RegistrationIdentity;
  agentVersion: string;
  os: string;
  arch: string;
  hostname: string;
  supportedAdapters: string[];
  /** Run kinds besides chat this build executes (RegisterRequest.run_kinds); default none. */
  runKinds?: RunKind[];
}

/** What the link delivers to the rest of the node. Handlers must not throw (a throw is logged and ignored). */
export interface LinkHandler {
  /** Registration accepted (first time or after a reconnect): apply the payload. */
  registered(response: RegisterResponse, context: { reconnect: boolean }): void | Promise<void>;
  runRequest(request: RunRequest): void;
  cancelRequest(request: CancelRequest): void;
  nodeCommandRequest(requestId: string, request: NodeCommandRequest): void;
  nodeConfigRefreshRequest(requestId: string, request: NodeConfigRefreshRequest): void;
  /** The connection was lost; the link reconnects unless the outcome is final. */
  disconnected(reason: string): void;
  /** Bytes the edge sends on an agent's model call (absent: the node offers no model endpoints). */
  modelCallData?(callId: string, data: Uint8Array): void;
  /** The edge's side of a model call ended ('' = plain end; otherwise why). */
  modelCallClose?(callId: string, reason: string): void;
}

export type LinkOutcome =
  | { kind: 'stopped'; reason: string }
  | { kind: 'rejected'; code: string; reason: string }
  | { kind: 'connect-failed'; message: string }
  | { kind: 'retries-exhausted'; attempts: number; lastError: string }
  | { kind: 'closed-by-edge'; reason: string };

export interface EdgeLinkOptions {
  connect: ConnectFunction;
  registration: RegistrationInfo;
  handler: LinkHandler;
  logger: Logger;
  clock?: Clock;
  retryIntervalMs?: number;
  /** Fraction of retryIntervalMs by which each wait may differ (default DEFAULT_RETRY_JITTER; 0: none). */
  retryJitter?: number;
  /** Uniform random numbers in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
  maxRetries?: number;
  registerTimeoutMs?: number;
}

export interface LinkStatusView {
  nodeId: string;
  connected: boolean;
  state: string;
  edgeId: string;
}

/** The connection of one registration, from an accepted RegisterResponse until it closes. */
interface LiveConnection {
  connection: FramedConnection;
  iterator: AsyncIterator<Envelope>;
  response: RegisterResponse;
  lastReceivedAt: number;
  pingTimer: ClockTimer | undefined;
  watchdogTimer: ClockTimer | undefined;
  pingSeq: number;
  peerGoodbye: string | undefined;
  ended: boolean;
}

type Attempt =
  | { ok: true; live: LiveConnection }
  | {
      ok: false;
      rejected: { code: string; reason: string; transient: boolean } | undefined;
      error: LinkError;
    };

export class EdgeLink implements Outbound {
  readonly #options: EdgeLinkOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #machine = new LinkStateMachine();
  readonly #stopController = new AbortController();
  #stopReason: string | undefined;
  #live: LiveConnection | undefined;
  /** A connection still in its handshake (so stop() can close it). */
  #handshake: FramedConnection | undefined;
  #running: Promise<LinkOutcome> | undefined;

  constructor(options: EdgeLinkOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
  }

  get state(): LinkState {
    return this.#machine.state;
  }

  onStateChange(listener: (next: LinkState, previous: LinkState) => void): void {
    this.#machine.onChange(listener);
  }

  /** The link as the `transport` node command reports it. */
  status(): LinkStatusView {
    const registered = this.#machine.state === 'registered';
    return {
      nodeId: this.#options.registration.nodeId,
      connected: registered,
      state: registered ? 'connected' : this.#machine.state,
      edgeId: this.#live?.response.edgeId ?? '',
    };
  }

  /** Connects and serves until the link ends for good. Call once. */
  run(): Promise<LinkOutcome> {
    this.#running ??= this.#run();
    return this.#running;
  }

  /** Sends when registered; resolves false when the link is down or the write failed. */
  async send(message: Envelope): Promise<boolean> {
    const live = this.#live;
    if (!live || live.ended || this.#machine.state !== 'registered') return false;
    try {
      await live.connection.send(message);
      return true;
    } catch (error) {
      this.#logger.debug({ error: errorMessage(error) }, 'send to edge failed');
      return false;
    }
  }

  /** Says Goodbye (`shutdown` by default), closes the connection and ends `run()` with `stopped`. Idempotent. */
  async stop(reason: string = CLOSE_REASONS.shutdown): Promise<void> {
    if (this.#stopReason === undefined && this.#machine.canTransition('closing')) {
      this.#stopReason = reason;
      this.#machine.transition('closing');
      this.#stopController.abort(reason);
      const closing: Promise<void>[] = [];
      if (this.#live) closing.push(this.#live.connection.close(reason, { goodbye: true }));
      if (this.#handshake) closing.push(this.#handshake.close(reason, { goodbye: true }));
      await Promise.all(closing);
    }
    if (this.#running) await this.#running;
  }

  async #run(): Promise<LinkOutcome> {
    const first = await this.#attempt();
    if (this.#stopReason !== undefined)
      return this.#finish({ kind: 'stopped', reason: this.#stopReason }, first);
    if (!first.ok) {
      if (first.rejected)
        return this.#finish({ kind: 'rejected', code: first.rejected.code, reason: first.rejected.reason });
      return this.#finish({ kind: 'connect-failed', message: first.error.message });
    }
    let live = first.live;
    let reconnect = false;
    for (;;) {
      // stop() may have run between the handshake and here (another microtask chain): do not re-enter registered.
      if (this.#stopReason !== undefined) {
        await live.connection.close(this.#stopReason, { goodbye: true });
        return this.#finish({ kind: 'stopped', reason: this.#stopReason });
      }
      if (live.response.protocolVersion !== 0 && live.response.protocolVersion !== PROTOCOL_VERSION) {
        this.#logger.warn(
          { edgeProtocol: live.response.protocolVersion, nodeProtocol: PROTOCOL_VERSION },
          'edge speaks another protocol version',
        );
      }
      this.#machine.transition('registered');
      this.#live = live;
      this.#logger.info(
        { edgeId: live.response.edgeId, reconnect, remoteAddress: live.connection.remoteAddress },
        'registered with edge',
      );
      await this.#notifyRegistered(live.response, reconnect);
      const reason = await this.#serve(live);
      this.#live = undefined;
      if (this.#stopReason !== undefined) return this.#finish({ kind: 'stopped', reason: this.#stopReason });
      this.#logger.warn({ reason }, 'lost the link to the edge');
      this.#machine.transition('reconnecting');
      this.#safely(() => this.#options.handler.disconnected(reason));
      if (FINAL_EDGE_REASONS.has(reason)) return this.#finish({ kind: 'closed-by-edge', reason });

      const next = await this.#reconnect();
      if ('kind' in next) return this.#finish(next);
      live = next.live;
      reconnect = true;
    }
  }

  /** Retries every retryIntervalMs up to maxRetries; a new live connection or the outcome that ends the link. */
  async #reconnect(): Promise<{ live: LiveConnection } | LinkOutcome> {
    const maxRetries = this.#options.maxRetries ?? DEFAULT_MAX_RETRIES;
    const interval = this.#options.retryIntervalMs ?? DEFAULT_RETRY_INTERVAL_MS;
    let lastError = '';
    for (let attempt = 1; attempt <= maxRetries; attempt += 1) {
      // No socket is open during this wait: the timer itself keeps the node alive until the next attempt.
      await sleep(this.#clock, this.#retryDelay(interval), this.#stopController.signal, { keepAlive: true });
      if (this.#stopReason !== undefined) return { kind: 'stopped', reason: this.#stopReason };
      this.#logger.info({ attempt, maxRetries }, 'reconnecting to edge');
      const result = await this.#attempt();
      if (this.#stopReason !== undefined) {
        if (result.ok) await result.live.connection.close(this.#stopReason, { goodbye: true });
        return { kind: 'stopped', reason: this.#stopReason };
      }
      if (result.ok) return { live: result.live };
      if (result.rejected && !result.rejected.transient) {
        return { kind: 'rejected', code: result.rejected.code, reason: result.rejected.reason };
      }
      // A peer with the wrong key is not a flaky network: retrying would only keep knocking on an impostor.
      if (result.error.code === 'edge_identity_mismatch') {
        return { kind: 'connect-failed', message: result.error.message };
      }
      lastError = result.error.message;
      this.#logger.warn({ attempt, maxRetries, error: lastError }, 'reconnect attempt failed');
    }
    return { kind: 'retries-exhausted', attempts: maxRetries, lastError };
  }

  /** The interval with ±retryJitter of uniform jitter, never negative. */
  #retryDelay(interval: number): number {
    const jitter = Math.min(1, Math.max(0, this.#options.retryJitter ?? DEFAULT_RETRY_JITTER));
    const random = (this.#options.random ?? Math.random)();
    return Math.max(0, Math.round(interval * (1 + jitter * (2 * random - 1))));
  }

  /** One dial + register handshake. */
  async #attempt(): Promise<Attempt> {
    const signal = this.#stopController.signal;
    let connection: FramedConnection;
    try {
      connection = await this.#options.connect(signal);
    } catch (error) {
      const linkError =
        error instanceof LinkError
          ? error
          : new LinkError('connect_failed', errorMessage(error), { cause: error });
      return { ok: false, rejected: undefined, error: linkError };
    }
    this.#handshake = connection;
    const iterator = connection.messages()[Symbol.asyncIterator]();
    const fail = async (error: LinkError, closeReason: string): Promise<Attempt> => {
      await connection.close(closeReason, { goodbye: error.code === 'protocol_violation' });
      return { ok: false, rejected: undefined, error };
    };
    try {
      const registration = this.#options.registration;
      await connection.send(
        envelope.registerRequest({
          nodeId: registration.nodeId,
          token: registration.token,
          agentVersion: registration.agentVersion,
          protocolVersion: PROTOCOL_VERSION,
          os: registration.os,
          arch: registration.arch,
          hostname: registration.hostname,
          supportedAdapters: registration.supportedAdapters,
          runKinds: registration.runKinds ?? [],
          agentKind: NODE_AGENT_KIND,
          ...(registration.identity ? { identityPublicKey: registration.identity.publicKeySpki } : {}),
        }),
      );
      const timeoutMs = this.#options.registerTimeoutMs ?? DEFAULT_REGISTER_TIMEOUT_MS;
      let first = await this.#withTimeout(iterator.next(), timeoutMs);
      // An edge that holds identities challenges the key sent above; an older edge answers at once.
      if (first !== 'timeout' && !first.done && first.value.msg?.$case === 'registerChallenge') {
        const identity = registration.identity;
        if (!identity) {
          return await fail(
            new LinkError('protocol_violation', 'edge sent an identity challenge to a node that sent no key'),
            'protocol_violation',
          );
        }
        const nonce = first.value.msg.registerChallenge.nonce;
        const signature = signIdentityProof(
          identity.privateKey,
          registration.nodeId,
          nonce,
          identityChannelBinding(connection),
        );
        await connection.send(envelope.registerProof(signature));
        first = await this.#withTimeout(iterator.next(), timeoutMs);
      }
      if (first === 'timeout') {
        return await fail(
          new LinkError('register_timeout', `edge did not answer the registration within ${timeoutMs} ms`),
          CLOSE_REASONS.registerTimeout,
        );
      }
      if (first.done) {
        const closed = await connection.closed;
        return await fail(
          new LinkError(
            'connect_failed',
            `edge closed the connection during registration (${closed.reason})`,
          ),
          closed.reason,
        );
      }
      const message = first.value.msg;
      if (message?.$case !== 'registerResponse') {
        return await fail(
          new LinkError(
            'protocol_violation',
            `edge answered the registration with ${message?.$case ?? 'nothing'}`,
          ),
          'protocol_violation',
        );
      }
      const response = message.registerResponse;
      if (!response.accepted) {
        await connection.close(CLOSE_REASONS.registerRejected);
        const code = rejectCodeName(response.rejectCode);
        const reason = response.reason || code;
        return {
          ok: false,
          rejected: {
            code,
            reason,
            transient: response.rejectCode === RegisterRejectCode.REGISTER_REJECT_CODE_SHUTTING_DOWN,
          },
          error: new LinkError('register_rejected', `edge rejected the registration: ${reason}`),
        };
      }
      return {
        ok: true,
        live: {
          connection,
          iterator,
          response,
          lastReceivedAt: this.#clock.now(),
          pingTimer: undefined,
          watchdogTimer: undefined,
          pingSeq: 0,
          peerGoodbye: undefined,
          ended: false,
        },
      };
    } catch (error) {
      return await fail(
        new LinkError('connect_failed', `registration failed: ${errorMessage(error)}`, { cause: error }),
        'connection_closed',
      );
    } finally {
      this.#handshake = undefined;
    }
  }

  /** Reads and dispatches until the connection ends; returns why it ended. */
  async #serve(live: LiveConnection): Promise<string> {
    const response = live.response;
    const intervalMs = response.heartbeatIntervalMs || DEFAULT_HEARTBEAT_INTERVAL_MS;
    const timeoutMs = response.heartbeatTimeoutMs || intervalMs * 3;
    this.#schedulePing(live, intervalMs);
    this.#armWatchdog(live, timeoutMs);
    try {
      for (;;) {
        const next = await live.iterator.next();
        if (next.done) break;
        live.lastReceivedAt = this.#clock.now();
        this.#dispatch(live, next.value);
      }
    } catch (error) {
      this.#logger.warn({ error: errorMessage(error) }, 'edge connection failed');
    } finally {
      live.ended = true;
      this.#clock.clearTimeout(live.pingTimer);
      this.#clock.clearTimeout(live.watchdogTimer);
    }
    const closed = await live.connection.closed;
    return live.peerGoodbye ?? closed.reason;
  }

  #dispatch(live: LiveConnection, message: Envelope): void {
    const body = message.msg;
    if (!body) return;
    const handler = this.#options.handler;
    switch (body.$case) {
      case 'heartbeatPing':
        void this.send(envelope.heartbeatPong(body.heartbeatPing.seq, this.#clock.now()));
        return;
      case 'heartbeatPong':
        return;
      case 'runRequest':
        this.#safely(() => handler.runRequest(body.runRequest));
        return;
      case 'cancelRequest':
        this.#safely(() => handler.cancelRequest(body.cancelRequest));
        return;
      case 'nodeCommandRequest':
        this.#safely(() => handler.nodeCommandRequest(message.requestId, body.nodeCommandRequest));
        return;
      case 'nodeConfigRefreshRequest':
        this.#safely(() =>
          handler.nodeConfigRefreshRequest(message.requestId, body.nodeConfigRefreshRequest),
        );
        return;
      case 'modelCallData':
        this.#safely(() => handler.modelCallData?.(body.modelCallData.callId, body.modelCallData.data));
        return;
      case 'modelCallClose':
        this.#safely(() => handler.modelCallClose?.(body.modelCallClose.callId, body.modelCallClose.reason));
        return;
      case 'goodbye':
        live.peerGoodbye = body.goodbye.reason;
        this.#logger.info({ reason: body.goodbye.reason, detail: body.goodbye.detail }, 'edge said goodbye');
        return;
      case 'registerRequest':
      case 'registerResponse':
      case 'registerChallenge':
      case 'registerProof':
      case 'runEvent':
      case 'nodeCommandResponse':
      case 'nodeConfigRefreshResult':
      case 'providerStatusReport':
      case 'providerLifecycleProgress':
      case 'nodeDiscovery':
      case 'modelCallOpen':
        this.#logger.warn({ kind: body.$case }, 'ignoring a message the edge should not send to a node');
        return;
      default: {
        const unreachable: never = body;
        this.#logger.warn({ message: String(unreachable) }, 'ignoring an unknown message');
      }
    }
  }

  #schedulePing(live: LiveConnection, intervalMs: number): void {
    live.pingTimer = this.#clock.setTimeout(() => {
      if (live.ended) return;
      live.pingSeq += 1;
      void live.connection
        .send(envelope.heartbeatPing(live.pingSeq, this.#clock.now()))
        .catch(() => undefined);
      this.#schedulePing(live, intervalMs);
    }, intervalMs);
  }

  /** Closes the connection when nothing at all arrived for `timeoutMs` (the edge pings too). */
  #armWatchdog(live: LiveConnection, timeoutMs: number): void {
    const remaining = live.lastReceivedAt + timeoutMs - this.#clock.now();
    live.watchdogTimer = this.#clock.setTimeout(
      () => {
        if (live.ended) return;
        if (this.#clock.now() - live.lastReceivedAt >= timeoutMs) {
          this.#logger.warn({ timeoutMs }, 'edge silent past the heartbeat timeout');
          live.peerGoodbye = undefined;
          void live.connection.close(CLOSE_REASONS.heartbeatTimeout, { goodbye: true });
          return;
        }
        this.#armWatchdog(live, timeoutMs);
      },
      Math.max(1, remaining),
    );
  }

  async #notifyRegistered(response: RegisterResponse, reconnect: boolean): Promise<void> {
    try {
      await this.#options.handler.registered(response, { reconnect });
    } catch (error) {
      this.#logger.error({ error: errorMessage(error) }, 'applying the registration payload failed');
    }
  }

  #withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T | 'timeout'> {
    let handle: ClockTimer | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      handle = this.#clock.setTimeout(() => resolve('timeout'), timeoutMs);
    });
    return Promise.race([promise, timeout]).finally(() => this.#clock.clearTimeout(handle));
  }

  #finish(outcome: LinkOutcome, attempt?: Attempt): LinkOutcome {
    if (attempt?.ok)
      void attempt.live.connection.close(this.#stopReason ?? CLOSE_REASONS.shutdown, { goodbye: true });
    if (this.#machine.state !== 'closing') this.#machine.transition('closing');
    this.#machine.transition('closed');
    this.#stopController.abort('link closed');
    this.#logger.info({ ...outcome }, 'link closed');
    return outcome;
  }

  #safely(action: () => void): void {
    try {
      action();
    } catch (error) {
      this.#logger.error({ error: errorMessage(error) }, 'link handler failed');
    }
  }
}

/**
 * Exit code for the process that ran the link: 0 only for a deliberate stop, EXIT_CODE_REPLACED when another
 * process took over the node's identity (a supervisor must not restart it), 1 for every other ending.
 */
export function exitCodeFor(outcome: LinkOutcome, replacedExitCode: number = EXIT_CODE_REPLACED): number {
  if (outcome.kind === 'stopped') return 0;
  if (outcome.kind === 'closed-by-edge' && outcome.reason === CLOSE_REASONS.replaced) return replacedExitCode;
  return 1;
}

/** One line for the operator: why the node stopped. */
export function describeOutcome(outcome: LinkOutcome): string {
  switch (outcome.kind) {
    case 'stopped':
      return `stopped (${outcome.reason})`;
    case 'rejected':
      return `edge rejected the registration: ${outcome.reason} (${outcome.code})`;
    case 'connect-failed':
      return outcome.message;
    case 'retries-exhausted':
      return `gave up after ${outcome.attempts} reconnect attempts: ${outcome.lastError || 'edge unreachable'}`;
    case 'closed-by-edge':
      return `edge closed the link: ${outcome.reason}`;
    default: {
      const unreachable: never = outcome;
      return String(unreachable);
    }
  }
}

function rejectCodeName(code: RegisterRejectCode): string {
  const name = RegisterRejectCode[code] as string | undefined;
  return name ? name.replace(/^REGISTER_REJECT_CODE_/, '').toLowerCase() : `code_${code}`;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
