// A TLS connection on the node port from the moment its TCP socket is accepted, before and after its handshake.
//
// Node's `tls.Server` hands a socket over only once its handshake finished and applies no bound of its own but
// a 120 s handshake timeout, so a peer that connects and never sends a ClientHello used to sit outside every
// pending-connection cap. The transport therefore accepts plain TCP sockets, counts each one against the caps at
// once (this object is what it tracks), and runs the server side of the TLS handshake itself: it must finish
// within `handshakeTimeoutMs` (the register timeout) or the socket is destroyed. Until the handshake is done the
// connection is idle as far as eviction goes (never `registering`); its bytes are the raw socket's, so a peer
// that sent nothing is evicted before a real node half way through its handshake. Once secure, `accept` turns
// the TLS socket into what the connection becomes (a NodeConnection) and every view delegates to that.
import type net from 'node:net';
import tls from 'node:tls';
import type { Clock } from '../clock.js';
import type { AcceptedConnection } from './connection-handler.js';

export interface TlsHandshakeOptions {
  socket: net.Socket;
  secureContext: tls.SecureContext;
  acceptedAtMs: number;
  handshakeTimeoutMs: number;
  /** Times the handshake. */
  clock: Clock;
  /** Builds the connection once the handshake is done. */
  accept(secure: tls.TLSSocket): AcceptedConnection;
  /** The handshake failed (bad ClientHello, wrong protocol) or did not finish in time. */
  onFailure(failure: { reason: 'tls-handshake' | 'tls-handshake-timeout'; message: string }): void;
}

export class TlsHandshake implements AcceptedConnection {
  readonly acceptedAtMs: number;
  readonly #raw: net.Socket;
  readonly #secure: tls.TLSSocket;
  readonly #options: TlsHandshakeOptions;
  #inner: AcceptedConnection | undefined;
  #closedReason: string | undefined;
  readonly #handshake: Promise<boolean>;

  constructor(options: TlsHandshakeOptions) {
    this.#options = options;
    this.#raw = options.socket;
    this.acceptedAtMs = options.acceptedAtMs;
    this.#secure = new tls.TLSSocket(options.socket, {
      isServer: true,
      secureContext: options.secureContext,
      requestCert: false,
      rejectUnauthorized: false,
    });
    this.#handshake = new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (secure: boolean) => {
        if (settled) return;
        settled = true;
        options.clock.clearTimeout(timer);
        this.#secure.off('secure', onSecure);
        this.#secure.off('error', onError);
        this.#secure.off('close', onClose);
        if (!secure) {
          // Errors after this point are the FramedConnection's; before it, nothing else listens.
          this.#secure.on('error', () => undefined);
          this.#secure.destroy();
          this.#raw.destroy();
        }
        resolve(secure);
      };
      const onSecure = () => settle(this.#closedReason === undefined);
      const onError = (error: Error) => {
        if (this.#closedReason === undefined) {
          options.onFailure({ reason: 'tls-handshake', message: error.message });
        }
        settle(false);
      };
      const onClose = () => settle(false);
      const timer = options.clock.setTimeout(() => {
        if (this.#closedReason === undefined) {
          options.onFailure({
            reason: 'tls-handshake-timeout',
            message: `no TLS handshake within ${options.handshakeTimeoutMs} ms`,
          });
        }
        settle(false);
      }, options.handshakeTimeoutMs);
      this.#secure.once('secure', onSecure);
      this.#secure.once('error', onError);
      this.#secure.once('close', onClose);
      this.#abort = () => settle(false);
    });
  }

  #abort: () => void = () => undefined;

  get bytesReceived(): number {
    return this.#inner?.bytesReceived ?? this.#raw.bytesRead;
  }

  get registering(): boolean {
    return this.#inner?.registering ?? false;
  }

  get registered(): boolean {
    return this.#inner?.registered ?? false;
  }

  async run(): Promise<void> {
    const secure = await this.#handshake;
    if (!secure) return;
    if (this.#closedReason !== undefined) {
      // Closed (evicted, shutdown) in the moment between the end of the handshake and here.
      this.#secure.destroy();
      return;
    }
    this.#inner = this.#options.accept(this.#secure);
    await this.#inner.run();
  }

  async close(reason: string): Promise<void> {
    if (this.#inner) {
      await this.#inner.close(reason);
      return;
    }
    if (this.#closedReason !== undefined) return;
    this.#closedReason = reason;
    this.#abort();
    await this.#handshake;
  }
}
