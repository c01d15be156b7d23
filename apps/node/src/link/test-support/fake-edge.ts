// A hand-written edge for link tests: a loopback TCP server speaking the real framing (FramedConnection), with
// the registration answer and heartbeat behaviour chosen by the test. Closing it drops every connection.
import net from 'node:net';
import {
  envelope,
  FramedConnection,
  fromWireRunEvent,
  identityChannelBinding,
  verifyIdentityProof,
  type Envelope,
  type RegisterRequest,
  type RegisterResponse,
  type RunEventPart,
} from '@iop/wire';

export interface FakeEdgeOptions {
  /** Answer to a register request; default accepted with a small heartbeat. */
  answer?: (request: RegisterRequest) => Partial<RegisterResponse> | undefined;
  /** Never answer register requests (a hung edge). */
  ignoreRegistrations?: boolean;
  /** Answer the node's pings with pongs (default true). */
  answerPings?: boolean;
  /** Challenge a request that carries an identity key with this nonce before answering it. */
  challenge?: Buffer;
}

export class FakeEdge {
  readonly received: Array<{ connection: number; message: Envelope }> = [];
  readonly connections: FramedConnection[] = [];
  readonly registrations: RegisterRequest[] = [];
  /** Whether each answered challenge carried a valid proof for the key of its request. */
  readonly proofs: boolean[] = [];
  readonly options: FakeEdgeOptions;
  #server: net.Server | undefined;
  #port = 0;

  private constructor(options: FakeEdgeOptions) {
    this.options = options;
  }

  static async start(options: FakeEdgeOptions = {}): Promise<FakeEdge> {
    const edge = new FakeEdge(options);
    await edge.listen(0);
    return edge;
  }

  get port(): number {
    return this.#port;
  }

  /** The parts of run `runId` received so far, in order (from every connection). */
  runParts(runId: string): RunEventPart[] {
    return this.received.flatMap((entry) => {
      if (entry.message.msg?.$case !== 'runEvent') return [];
      const event = fromWireRunEvent(entry.message.msg.runEvent);
      return event && event.runId === runId ? [event.part] : [];
    });
  }

  /** Listens again on the same port (an edge restart). */
  async restart(): Promise<void> {
    await this.listen(this.#port);
  }

  async listen(port: number): Promise<void> {
    const server = net.createServer((socket) => this.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as net.AddressInfo).port;
  }

  /** Stops listening and closes every connection (optionally with a Goodbye reason). */
  async close(goodbye?: string): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    const closing = this.connections.map((connection) =>
      connection.close(goodbye ?? 'test-close', { goodbye: goodbye !== undefined }),
    );
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all(closing);
  }

  /** The newest connection (throws when none). */
  latest(): FramedConnection {
    const connection = this.connections.at(-1);
    if (!connection) throw new Error('no connection yet');
    return connection;
  }

  kinds(connection?: number): string[] {
    return this.received
      .filter((entry) => connection === undefined || entry.connection === connection)
      .map((entry) => entry.message.msg?.$case ?? 'none');
  }

  async #answer(connection: FramedConnection, request: RegisterRequest | undefined): Promise<void> {
    const answer = (request && this.options.answer?.(request)) ?? {
      accepted: true,
      edgeId: 'fake-edge',
      heartbeatIntervalMs: 50,
      heartbeatTimeoutMs: 5000,
    };
    await connection.send(envelope.registerResponse(answer));
    if (!answer.accepted) await connection.close('register-rejected');
  }

  #accept(socket: net.Socket): void {
    const connection = new FramedConnection(socket, { closeTimeoutMs: 200 });
    const index = this.connections.push(connection) - 1;
    void (async () => {
      try {
        for await (const message of connection.messages()) {
          this.received.push({ connection: index, message });
          const body = message.msg;
          if (body?.$case === 'registerProof') {
            const request = this.registrations.at(-1);
            this.proofs.push(
              request !== undefined &&
                this.options.challenge !== undefined &&
                verifyIdentityProof(
                  request.identityPublicKey,
                  body.registerProof.signature,
                  request.nodeId,
                  this.options.challenge,
                  identityChannelBinding(connection),
                ),
            );
            await this.#answer(connection, request);
          } else if (body?.$case === 'registerRequest') {
            this.registrations.push(body.registerRequest);
            if (this.options.ignoreRegistrations) continue;
            if (this.options.challenge && body.registerRequest.identityPublicKey.length > 0) {
              await connection.send(envelope.registerChallenge(this.options.challenge));
              continue;
            }
            await this.#answer(connection, body.registerRequest);
          } else if (body?.$case === 'heartbeatPing' && this.options.answerPings !== false) {
            await connection.send(envelope.heartbeatPong(body.heartbeatPing.seq));
          }
        }
      } catch {
        // The test decides what a broken connection means; the fake edge just stops reading.
      }
    })();
  }
}

/** Polls until `condition` holds (bounded). */
export async function waitFor(condition: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
