// One accepted TCP/TLS connection of a node, from its first frame to its close (the transport accepted the
// socket and bounds it until registration; this is what the connection becomes).
//
// Sequence: the first frame must be a RegisterRequest within `register_timeout_ms` (else close
// `register-timeout`; any other first frame closes with `protocol_violation`). Until it is accepted the peer may
// send frames of at most the pre-registration limit (64 KiB by default); the full limits apply once registered.
// A rejected registration gets a RegisterResponse with reject_code + reason, then the
// connection closes (`register-rejected`). An accepted one gets its NodeConfigPayload and heartbeat settings,
// becomes a NodeLink in the registry (replacing — and closing with `replaced` — an older connection of the same
// node), and is announced as a `connected` EdgeNodeEvent. From then on frames go to the link; the edge pings
// every heartbeat interval and closes with `heartbeat-timeout` when nothing at all arrived for the heartbeat
// timeout (one HeartbeatSweeper does this for every connection of the transport). Whatever ends the connection,
// `run()` resolves after the link was marked closed (ending its runs and requests), removed from the registry,
// and a `disconnected` event with the reason was published.
//
// Identity: a request with a valid token that carries an identity key is answered with a RegisterChallenge (a
// fresh nonce); the node must answer with a RegisterProof signed by that key over the nonce and the TLS session
// (node-identity-proof in @iop/wire) within the register timeout. The key must be the one on record for the node
// (node-identity-store.ts; recorded on the first proof with the current token). A request without a key is an
// older agent: accepted only while no identity is on record. Every refusal here is `identity_mismatch` and happens
// before the registry is touched, so the node already connected stays connected.
import type { RegisterRejectCode } from '@iop/wire';
import {
  CLOSE_REASONS,
  envelope as build,
  identityChannelBinding,
  identityFingerprint,
  isIdentityPublicKey,
  isWireError,
  NODE_IDENTITY_NONCE_BYTES,
  PROTOCOL_VERSION,
  RegisterRejectCode as RejectCode,
  verifyIdentityProof,
  type Envelope,
  type FramedConnection,
  type InputLimits,
  type NodeConfigPayload,
  type RegisterRequest,
} from '@iop/wire';
import type { EventBus } from '../events/types.js';
import type { Clock, ClockTimer } from '../clock.js';
import type { Logger } from '../logging.js';
import type { AcceptContext, AcceptedConnection } from '../transport/connection-handler.js';
import type { HeartbeatHandle, HeartbeatSweeper, HeartbeatTarget } from './heartbeat-sweeper.js';
import { NodeLink } from './node-link.js';
import type { ModelCallTermination } from './model-call-relay.js';
import type { NodeRegistry } from './node-registry.js';
import type { NodeStore } from './node-store.js';
import type { NodeIdentityStore } from './node-identity-store.js';
import { evaluateRegistration } from './registration.js';
import { sha256Hex } from './node-store.js';

export interface ConnectionContext {
  edgeId: string;
  store: NodeStore;
  registry: NodeRegistry;
  events: EventBus;
  clock: Clock;
  registerTimeoutMs: number;
  heartbeatIntervalMs: number;
  heartbeatTimeoutMs: number;
  /** Pings every registered connection and times silent ones out (one timer for all; heartbeat-sweeper.ts). */
  heartbeats: HeartbeatSweeper;
  requestTimeoutMs: number | undefined;
  /** Where agents' model calls are served (model-call-relay.ts); none = refused. */
  modelCalls?: ModelCallTermination | undefined;
  payloadFor(nodeId: string): NodeConfigPayload;
  /** `nodes[].agent_kind` for a configured node id; undefined = not configured. */
  agentKindFor?(nodeId: string): string | undefined;
  /** Called with each accepted link and the token it registered with (live revocation re-checks it). */
  onAuthenticated?(link: NodeLink, token: string): void;
  /** A connection is being closed because the peer sent bad frames (`frame_too_large`, `malformed_frame`, ...). */
  onFrameError(code: string): void;
  /** Incoming limits applied once the node is registered (before that the transport's smaller ones hold). */
  registeredInputLimits: InputLimits;
  /** The identity key on record per node (checked and recorded at registration). */
  identities: NodeIdentityStore;
  /** Random bytes for challenge nonces (default node:crypto). */
  randomBytes(size: number): Buffer;
}

type IdentityDecision =
  | { ok: true; fingerprint: string }
  | { ok: false; code: RegisterRejectCode; reason: string; logReason: string }
  | { ok: false; ended: true };

type FirstFrame =
  | { kind: 'frame'; envelope: Envelope }
  | { kind: 'timeout' }
  | { kind: 'ended' }
  | { kind: 'error'; error: unknown };

export class NodeConnection implements AcceptedConnection {
  private link: NodeLink | undefined;
  private heartbeat: HeartbeatHandle | undefined;
  private closingReason: string | undefined;
  private firstFrameReceived = false;
  private nodePingAtMs: number | undefined;
  /** When the socket was accepted (for oldest-idle eviction). */
  readonly acceptedAtMs: number;

  /**
   * `context` is shared by every connection of the transport; `peer` is what the transport knows of this one
   * (its address, logger, and whether the transport is stopping).
   */
  constructor(
    private readonly connection: FramedConnection,
    private readonly context: ConnectionContext,
    private readonly peer: AcceptContext,
  ) {
    this.acceptedAtMs = context.clock.now();
  }

  /** Remote IP address (no port), the key of the per-address limits. */
  get remoteIp(): string {
    return this.peer.remoteIp;
  }

  /** Bytes the peer has sent so far. */
  get bytesReceived(): number {
    return this.connection.bytesReceived;
  }

  /** The first frame is complete and the registration is being decided (not idle: never evicted). */
  get registering(): boolean {
    return this.firstFrameReceived && this.link === undefined && this.closingReason === undefined;
  }

  /** When the node's own last heartbeat_ping arrived (the heartbeat sweeper then need not ping it). */
  get lastPingReceivedUnixMs(): number | undefined {
    return this.nodePingAtMs;
  }

  get nodeLink(): NodeLink | undefined {
    return this.link;
  }

  get registered(): boolean {
    return this.link !== undefined;
  }

  /** Closes the connection with a Goodbye; `run()` then finishes the bookkeeping. */
  async close(reason: string): Promise<void> {
    this.closingReason ??= reason;
    if (this.link) await this.link.close(reason, { goodbye: true });
    else await this.connection.close(reason, { goodbye: true });
  }

  async run(): Promise<void> {
    const remoteAddress = this.connection.remoteAddress;
    const logger = this.peer.logger.child({ remoteAddress });
    const iterator = this.connection.messages()[Symbol.asyncIterator]();
    try {
      const first = await this.firstFrame(iterator);
      if (first.kind !== 'frame') {
        await this.rejectEarly(first, logger);
        return;
      }
      if (first.envelope.msg?.$case !== 'registerRequest') {
        const got = first.envelope.msg?.$case ?? 'an empty envelope';
        logger.warn(
          { reason: CLOSE_REASONS.protocolViolation, firstFrame: got },
          'connection closed: the first frame is not a register request',
        );
        this.closingReason ??= CLOSE_REASONS.protocolViolation;
        await this.connection.close(CLOSE_REASONS.protocolViolation, {
          goodbye: true,
          detail: `the first frame must be a register request, got ${got}`,
        });
        return;
      }
      this.firstFrameReceived = true;
      const request = first.envelope.msg.registerRequest;
      const decision = await evaluateRegistration(request, {
        store: this.context.store,
        shuttingDown: this.peer.isShuttingDown() || this.closingReason !== undefined,
        expectedAgentKind: (nodeId) => this.context.agentKindFor?.(nodeId),
      });
      if (!decision.accepted) {
        await this.refuse(decision.code, decision.reason, decision.logReason, logger, request);
        return;
      }
      const identity = await this.proveIdentity(request, iterator, logger);
      if (!identity.ok) {
        if ('ended' in identity) return;
        await this.refuse(identity.code, identity.reason, identity.logReason, logger, request);
        return;
      }
      if (!(await this.accept(request, identity.fingerprint, remoteAddress, logger))) return;
      await this.pump(iterator, logger);
    } finally {
      this.stopHeartbeat();
      await this.finish(logger);
    }
  }

  /**
   * The identity check of a request whose token was accepted: challenge the key it carries, check the proof and
   * the key on record, record it on a first registration. See the module header.
   */
  private async proveIdentity(
    request: RegisterRequest,
    iterator: AsyncIterator<Envelope>,
    logger: Logger,
  ): Promise<IdentityDecision> {
    const { identities } = this.context;
    const nodeId = request.nodeId;
    const mismatch = (reason: string, logReason: string): IdentityDecision => ({
      ok: false,
      code: RejectCode.REGISTER_REJECT_CODE_IDENTITY_MISMATCH,
      reason,
      logReason,
    });
    const isCurrent = async (record: { node_id: string; token_sha256: string }) =>
      (await this.context.store.verifyDigest(record.node_id, record.token_sha256)).ok;
    const resetHint = `if this is a re-install of the node, run 'iop-edge node register ${nodeId}' on the edge (a new token resets its identity)`;
    try {
      const key = Buffer.from(request.identityPublicKey);
      if (key.length === 0) {
        const onRecord = await identities.current(nodeId, isCurrent);
        if (!onRecord) return { ok: true, fingerprint: '' };
        return mismatch(
          `node '${nodeId}' has an identity key on record (${onRecord.fingerprint}) and this agent has no identity support: upgrade iop-node; ${resetHint}`,
          'identity-missing',
        );
      }
      if (!isIdentityPublicKey(key)) {
        return {
          ok: false,
          code: RejectCode.REGISTER_REJECT_CODE_MALFORMED,
          reason: 'identity_public_key is not an Ed25519 SubjectPublicKeyInfo',
          logReason: 'malformed-identity-key',
        };
      }
      const onRecord = await identities.current(nodeId, isCurrent);
      const presented = identityFingerprint(key);
      if (onRecord && onRecord.fingerprint !== presented) {
        return mismatch(
          `node '${nodeId}' is bound to identity ${onRecord.fingerprint}, this agent holds ${presented}: another machine (or a copy of the token) cannot become the node; ${resetHint}`,
          'identity-mismatch',
        );
      }
      const nonce = this.context.randomBytes(NODE_IDENTITY_NONCE_BYTES);
      await this.connection.send(build.registerChallenge(nonce));
      const answer = await this.nextFrame(iterator);
      if (answer.kind !== 'frame') {
        await this.rejectEarly(answer, logger);
        return { ok: false, ended: true };
      }
      if (answer.envelope.msg?.$case !== 'registerProof') {
        return mismatch(
          `expected a register proof for the identity challenge, got ${answer.envelope.msg?.$case ?? 'an empty envelope'}`,
          'identity-no-proof',
        );
      }
      const binding = identityChannelBinding(this.connection);
      if (!verifyIdentityProof(key, answer.envelope.msg.registerProof.signature, nodeId, nonce, binding)) {
        return mismatch(
          `the identity proof of node '${nodeId}' does not verify with the key it presented (${presented})`,
          'identity-bad-proof',
        );
      }
      const claim = await identities.claim(nodeId, key, sha256Hex(request.token), isCurrent);
      switch (claim.outcome) {
        case 'recorded':
          logger.info({ nodeId, identity: claim.record.fingerprint }, 'node identity recorded');
          return { ok: true, fingerprint: claim.record.fingerprint };
        case 'match':
          return { ok: true, fingerprint: claim.record.fingerprint };
        case 'mismatch':
          return mismatch(
            `node '${nodeId}' is bound to identity ${claim.record.fingerprint}, this agent holds ${presented}; ${resetHint}`,
            'identity-mismatch',
          );
        default: {
          const unreachable: never = claim;
          throw new Error(`unexpected identity claim ${JSON.stringify(unreachable)}`);
        }
      }
    } catch (error) {
      if (isWireError(error)) {
        // The challenge could not be sent: the connection is gone.
        this.closingReason ??= errorCode(error);
        await this.connection.close(errorCode(error));
        return { ok: false, ended: true };
      }
      return {
        ok: false,
        code: RejectCode.REGISTER_REJECT_CODE_UNSPECIFIED,
        reason: 'the edge cannot read or write its node identities; ask the operator to check the edge log',
        logReason: `identity-store-error: ${errorText(error)}`,
      };
    }
  }

  private firstFrame(iterator: AsyncIterator<Envelope>): Promise<FirstFrame> {
    return this.nextFrame(iterator);
  }

  /** The next frame within the register timeout. */
  private async nextFrame(iterator: AsyncIterator<Envelope>): Promise<FirstFrame> {
    const { clock } = this.context;
    let timer: ClockTimer | undefined;
    const timeout = new Promise<FirstFrame>((resolve) => {
      timer = clock.setTimeout(() => resolve({ kind: 'timeout' }), this.context.registerTimeoutMs);
    });
    const next = iterator.next().then(
      (result): FirstFrame => (result.done ? { kind: 'ended' } : { kind: 'frame', envelope: result.value }),
      (error: unknown): FirstFrame => ({ kind: 'error', error }),
    );
    try {
      return await Promise.race([next, timeout]);
    } finally {
      clock.clearTimeout(timer);
    }
  }

  private async rejectEarly(first: Exclude<FirstFrame, { kind: 'frame' }>, logger: Logger): Promise<void> {
    switch (first.kind) {
      case 'timeout':
        logger.warn(
          { reason: CLOSE_REASONS.registerTimeout, timeoutMs: this.context.registerTimeoutMs },
          'connection closed: no register request in time',
        );
        await this.connection.close(CLOSE_REASONS.registerTimeout, { goodbye: true });
        return;
      case 'ended':
        // A peer that connects and leaves without a byte is a port probe or health check, not a fault.
        logger.info(
          { reason: this.closingReason ?? 'closed-before-register' },
          'connection closed before registering',
        );
        return;
      case 'error':
        logger.warn(
          { reason: errorCode(first.error), error: errorText(first.error) },
          'connection closed: bad input before registering',
        );
        this.reportFrameError(first.error);
        await this.connection.close(errorCode(first.error));
        return;
      default: {
        const unreachable: never = first;
        throw new Error(`unexpected first frame result ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private async refuse(
    code: RegisterRejectCode,
    reason: string,
    logReason: string,
    logger: Logger,
    request: RegisterRequest | undefined,
  ): Promise<void> {
    logger.warn(
      {
        reason: logReason,
        nodeId: request?.nodeId,
        agentVersion: request?.agentVersion,
        protocolVersion: request?.protocolVersion,
      },
      'registration rejected',
    );
    try {
      await this.connection.send(
        build.registerResponse({
          accepted: false,
          rejectCode: code,
          reason,
          edgeId: this.context.edgeId,
          protocolVersion: PROTOCOL_VERSION,
        }),
      );
    } catch (error) {
      logger.debug({ error: errorText(error) }, 'rejection not delivered');
    }
    await this.connection.close(CLOSE_REASONS.registerRejected);
  }

  private async accept(
    request: RegisterRequest,
    identityFingerprint: string,
    remoteAddress: string,
    logger: Logger,
  ): Promise<boolean> {
    const payload = this.context.payloadFor(request.nodeId);
    const now = this.context.clock.now();
    const link = new NodeLink({
      channel: this.connection,
      info: {
        nodeId: request.nodeId,
        alias: payload.alias || request.nodeId,
        agentVersion: request.agentVersion,
        os: request.os,
        arch: request.arch,
        hostname: request.hostname,
        remoteAddress,
        supportedAdapters: [...request.supportedAdapters],
        runKinds: [...request.runKinds],
        connectedSinceUnixMs: now,
        identityFingerprint,
      },
      payload,
      logger: logger.child({ nodeId: request.nodeId }),
      clock: this.context.clock,
      ...(this.context.requestTimeoutMs !== undefined
        ? { requestTimeoutMs: this.context.requestTimeoutMs }
        : {}),
      ...(this.context.modelCalls ? { modelCalls: this.context.modelCalls } : {}),
    });
    // The node may send large frames (run events, command results) from its first frame after this response.
    this.connection.setInputLimits(this.context.registeredInputLimits);
    if (this.closingReason !== undefined) return false;
    // Queued before the link is added, delivered after: the node is in the registry (and announced) by the time
    // it learns it was accepted, so whatever it or anyone does next finds it there. A response that cannot be
    // delivered ends the connection, and `finish` then removes the link and announces it gone.
    const responseSent = this.connection.send(
      build.registerResponse({
        accepted: true,
        edgeId: this.context.edgeId,
        protocolVersion: PROTOCOL_VERSION,
        heartbeatIntervalMs: this.context.heartbeatIntervalMs,
        heartbeatTimeoutMs: this.context.heartbeatTimeoutMs,
        config: payload,
        identityFingerprint,
      }),
    );
    this.link = link;
    this.context.onAuthenticated?.(link, request.token);
    const previous = this.context.registry.add(link);
    if (previous) {
      previous.markClosed(CLOSE_REASONS.replaced);
      this.publish('disconnected', previous, CLOSE_REASONS.replaced);
      logger.info(
        { nodeId: request.nodeId, previousAddress: previous.info.remoteAddress },
        'node reconnected; closing its previous connection',
      );
      previous.close(CLOSE_REASONS.replaced, { goodbye: true }).catch(() => undefined);
    }
    this.publish('connected', link, 'registered');
    link.onDiscovered(() => this.publish('discovered', link, 'reported'));
    try {
      await responseSent;
    } catch (error) {
      logger.warn({ nodeId: request.nodeId, error: errorText(error) }, 'register response not delivered');
      this.closingReason ??= errorCode(error);
      await this.connection.close(errorCode(error));
      return false;
    }
    if (this.closingReason !== undefined) return false;
    logger.info(
      {
        nodeId: request.nodeId,
        alias: link.info.alias,
        agentVersion: request.agentVersion,
        os: request.os,
        arch: request.arch,
        hostname: request.hostname,
        revision: payload.revision,
        identity: identityFingerprint || 'none',
      },
      'node registered',
    );
    this.startHeartbeat(link, logger);
    return true;
  }

  private async pump(iterator: AsyncIterator<Envelope>, logger: Logger): Promise<void> {
    const link = this.link;
    if (!link) return;
    try {
      for (;;) {
        const result = await iterator.next();
        if (result.done) return;
        if (result.value.msg?.$case === 'heartbeatPing') this.nodePingAtMs = this.context.clock.now();
        link.handle(result.value);
      }
    } catch (error) {
      // A peer that vanished (reset, killed) is not one that sent bad bytes: only the latter is a warning.
      const lost = isWireError(error) && error.transient;
      logger[lost ? 'info' : 'warn'](
        { nodeId: link.nodeId, reason: errorCode(error), error: errorText(error) },
        lost ? 'connection lost' : 'connection closed: bad input from node',
      );
      this.reportFrameError(error);
      this.closingReason ??= errorCode(error);
      await this.connection.close(errorCode(error));
    }
  }

  private startHeartbeat(link: NodeLink, logger: Logger): void {
    this.heartbeat = this.context.heartbeats.add(new LinkHeartbeat(link, this), (silentMs) => {
      logger.warn(
        { nodeId: link.nodeId, silentMs, timeoutMs: this.context.heartbeatTimeoutMs },
        'node missed its heartbeat deadline',
      );
      this.close(CLOSE_REASONS.heartbeatTimeout).catch(() => undefined);
    });
  }

  private stopHeartbeat(): void {
    this.heartbeat?.remove();
    this.heartbeat = undefined;
  }

  private async finish(logger: Logger): Promise<void> {
    const closed = await this.connection.closed;
    const link = this.link;
    if (!link) return;
    const reason = link.closedReason ?? this.closingReason ?? closed.reason;
    const wasCurrent = this.context.registry.remove(link);
    const alreadyAnnounced = link.closed; // a replaced link was announced when it was replaced
    link.markClosed(reason);
    if (wasCurrent || !alreadyAnnounced) this.publish('disconnected', link, reason);
    logger.info({ nodeId: link.nodeId, reason, byPeer: closed.byPeer }, 'node disconnected');
  }

  /** Bad bytes from the peer (not a network failure) count as a frame error. */
  private reportFrameError(error: unknown): void {
    if (isWireError(error) && !error.transient) this.context.onFrameError(error.code);
  }

  private publish(kind: 'connected' | 'disconnected' | 'discovered', link: NodeLink, reason: string): void {
    this.context.events.publish({
      type: 'node',
      event: {
        kind,
        nodeId: link.nodeId,
        alias: link.info.alias,
        reason,
        atUnixMs: this.context.clock.now(),
      },
    });
  }
}

/** A registered connection as the heartbeat sweeper sees it (one object, no closures: there are 10,000s). */
class LinkHeartbeat implements HeartbeatTarget {
  constructor(
    private readonly link: NodeLink,
    private readonly connection: NodeConnection,
  ) {}

  get closed(): boolean {
    return this.link.closed;
  }

  get lastSeenUnixMs(): number {
    return this.link.lastSeenUnixMs;
  }

  get lastPingReceivedUnixMs(): number | undefined {
    return this.connection.lastPingReceivedUnixMs;
  }

  sendHeartbeatPing(seq: number): Promise<void> {
    return this.link.sendHeartbeatPing(seq);
  }
}

function errorCode(error: unknown): string {
  return isWireError(error) ? error.code : 'connection-error';
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
