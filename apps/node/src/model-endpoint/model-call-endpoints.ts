// The node's end of agents' model calls (issue 42; the edge's end is apps/edge's node/model-call-relay.ts). For a
// run with RunRequest.model_access the CLI adapter asks for an endpoint: a TCP listener on 127.0.0.1 (port chosen
// by the system) that lives exactly as long as the run. Every connection the agent opens to it becomes one model
// call carried over the node's link: ModelCallOpen (call id, run id), the connection's bytes as ModelCallData in
// frames of at most `chunkBytes`, ModelCallClose when either side ends. The node does not read the HTTP inside:
// the edge serves it with its own OpenAI/Anthropic surface and checks the run's secret there.
//
// Bounds: open calls per run (a further connection is closed at once), bytes from the edge not yet taken by the
// agent's socket per call (`overflow`). Towards the edge the socket is paused while a frame is on its way (the
// link's send resolves once the frame is written or queued behind 'drain'), so a slow link slows the agent.
// Lifecycle: the endpoint's close (the run ended) stops the listener and ends every open call with
// `parent_ended`; a lost link destroys every call's socket (the edge has dropped them too).
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { envelope, type Envelope } from '@iop/wire';
import type { AdapterLogger } from '../adapters/adapter.js';
import type { ModelEndpoint, ModelEndpointRequest, ModelEndpoints } from '../adapters/model-endpoint.js';

export interface ModelCallEndpointLimits {
  /** Open calls of one run. */
  maxCallsPerRun: number;
  /** Bytes from the edge one call may hold that its socket has not written yet. */
  maxPendingBytes: number;
  /** Largest ModelCallData payload sent to the edge. */
  chunkBytes: number;
}

export const DEFAULT_MODEL_CALL_ENDPOINT_LIMITS: Readonly<ModelCallEndpointLimits> = Object.freeze({
  maxCallsPerRun: 16,
  maxPendingBytes: 4 * 1024 * 1024,
  chunkBytes: 64 * 1024,
});

export const MODEL_CALL_REASONS = {
  parentEnded: 'parent_ended',
  overflow: 'overflow',
  error: 'error',
} as const;

export interface ModelCallEndpointsDeps {
  /** Sends towards the edge; resolves false when the link is down (the call is then dropped). */
  send(message: Envelope): Promise<boolean>;
  logger: AdapterLogger;
  limits?: Partial<ModelCallEndpointLimits>;
  /** Call ids (default random UUIDs). */
  randomId?: () => string;
}

/** One agent connection carried over the link. */
interface Call {
  readonly callId: string;
  readonly runId: string;
  readonly socket: net.Socket;
  /** ModelCallClose was sent (or must not be: the link is gone). */
  closeSent: boolean;
}

/** The model endpoints of this node's runs and the routing of the edge's model-call frames to their sockets. */
export class ModelCallEndpoints implements ModelEndpoints {
  readonly #deps: ModelCallEndpointsDeps;
  readonly #limits: ModelCallEndpointLimits;
  readonly #calls = new Map<string, Call>();
  readonly #randomId: () => string;

  constructor(deps: ModelCallEndpointsDeps) {
    this.#deps = deps;
    this.#limits = { ...DEFAULT_MODEL_CALL_ENDPOINT_LIMITS, ...deps.limits };
    this.#randomId = deps.randomId ?? randomUUID;
  }

  /** Open calls of every run (tests, diagnostics). */
  get openCalls(): number {
    return this.#calls.size;
  }

  async open(request: ModelEndpointRequest): Promise<ModelEndpoint> {
    const runCalls = new Set<Call>();
    let closed = false;
    const server = net.createServer({ pauseOnConnect: true }, (socket) => {
      if (closed || runCalls.size >= this.#limits.maxCallsPerRun) {
        this.#deps.logger.warn(
          { run_id: request.runId },
          'model call refused on the node (too many open calls)',
        );
        socket.destroy();
        return;
      }
      const call = this.#accept(request.runId, socket);
      runCalls.add(call);
      socket.once('close', () => runCalls.delete(call));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) =>
      this.#deps.logger.warn(
        { run_id: request.runId, error: error.message },
        'model endpoint listener failed',
      ),
    );
    const { port } = server.address() as net.AddressInfo;
    this.#deps.logger.debug({ run_id: request.runId, port }, 'model endpoint listening');
    return {
      values: {
        modelBaseUrl: `http://127.0.0.1:${port}/v1`,
        anthropicBaseUrl: `http://127.0.0.1:${port}`,
        apiKey: request.apiKey,
        model: request.model,
      },
      close: () => {
        if (closed) return;
        closed = true;
        server.close();
        this.#deps.logger.debug(
          { run_id: request.runId, open_calls: runCalls.size },
          'model endpoint closed',
        );
        for (const call of [...runCalls]) this.#end(call, MODEL_CALL_REASONS.parentEnded);
      },
    };
  }

  /** ModelCallData from the edge: written to the call's socket. */
  data(callId: string, data: Uint8Array): void {
    const call = this.#calls.get(callId);
    if (!call || call.socket.destroyed) return;
    if (call.socket.writableLength + data.byteLength > this.#limits.maxPendingBytes) {
      this.#deps.logger.warn({ run_id: call.runId, call_id: callId }, 'model call overflowed on the node');
      this.#end(call, MODEL_CALL_REASONS.overflow);
      return;
    }
    call.socket.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }

  /** ModelCallClose from the edge: a plain end ends the socket after what was written; any reason destroys it. */
  close(callId: string, reason: string): void {
    const call = this.#calls.get(callId);
    if (!call) return;
    call.closeSent = true;
    this.#calls.delete(callId);
    if (reason === '') call.socket.end();
    else call.socket.destroy();
  }

  /** The link is gone: every call's socket is destroyed (nothing can be sent about them any more). */
  linkLost(): void {
    for (const call of [...this.#calls.values()]) {
      call.closeSent = true;
      call.socket.destroy();
    }
    this.#calls.clear();
  }

  #accept(runId: string, socket: net.Socket): Call {
    const call: Call = { callId: this.#randomId(), runId, socket, closeSent: false };
    this.#calls.set(call.callId, call);
    const send = (message: Envelope) =>
      this.#deps.send(message).then(
        (sent) => sent,
        () => false,
      );
    // Frames of a call leave in order: each send is chained after the previous one.
    let chain: Promise<boolean> = send(envelope.modelCallOpen(call.callId, runId));
    socket.on('data', (chunk: Buffer) => {
      socket.pause();
      for (let offset = 0; offset < chunk.byteLength; offset += this.#limits.chunkBytes) {
        const part = chunk.subarray(offset, offset + this.#limits.chunkBytes);
        chain = chain.then((ok) => (ok ? send(envelope.modelCallData(call.callId, part)) : false));
      }
      void chain.then((ok) => {
        if (!ok) {
          // The link is down: the edge cannot have this call any more.
          call.closeSent = true;
          socket.destroy();
        } else if (!socket.destroyed) socket.resume();
      });
    });
    socket.on('end', () => {
      // The agent finished sending; the edge's answer may still be on its way (half-close).
      chain = chain.then((ok) => (ok ? this.#sendClose(call, '') : false));
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.#calls.get(call.callId) === call) this.#calls.delete(call.callId);
      if (!call.closeSent) chain = chain.then(() => this.#sendClose(call, MODEL_CALL_REASONS.error));
    });
    socket.resume();
    return call;
  }

  /** Ends a call from this side with `reason` sent to the edge. */
  #end(call: Call, reason: string): void {
    if (this.#calls.get(call.callId) === call) this.#calls.delete(call.callId);
    void this.#sendClose(call, reason);
    call.socket.destroy();
  }

  #sendClose(call: Call, reason: string): Promise<boolean> {
    if (call.closeSent) return Promise.resolve(true);
    call.closeSent = true;
    return this.#deps.send(envelope.modelCallClose(call.callId, reason)).catch(() => false);
  }
}
