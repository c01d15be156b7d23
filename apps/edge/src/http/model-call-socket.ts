// The in-memory sockets that carry agents' model calls (issue 42): the node relays an agent's connection to its
// run's model endpoint over the node link, and the edge serves it as a connection of its own OpenAI listener
// (node/model-call-relay.ts makes the socket and hands it to the listener's http.Server). What such a connection
// is — which parent run it belongs to, which node's link carried it — is attached here, so the listener's host
// guard and the surfaces' authentication can tell it from a public connection without any of them knowing the
// relay. Only the relay marks sockets; a socket accepted from the network is never in the map.
import type { Duplex } from 'node:stream';

/** The agent run a model-call connection belongs to and the node whose link carried it. */
export interface ModelCallContext {
  readonly parentRunId: string;
  readonly nodeId: string;
}

/** Serves one in-memory connection as if a client had connected to the listener (HTTP/1.1 on `socket`). */
export type ServeConnection = (socket: Duplex) => void;

/**
 * Where the relay hands model-call connections: the OpenAI listener attaches its connection server when it
 * starts and detaches it when it closes. Until then (or with the OpenAI surface disabled) calls are refused.
 */
export interface ModelCallEntry {
  /** Sets the server of model-call connections; returns the detach function. */
  serveWith(serve: ServeConnection): () => void;
}

const contexts = new WeakMap<object, ModelCallContext>();

/** Marks `socket` as a model call of `context` (the relay, before the socket is served). */
export function markModelCall(socket: object, context: ModelCallContext): void {
  contexts.set(socket, context);
}

/** The model call a connection carries; undefined for every connection accepted from the network. */
export function modelCallOf(socket: object): ModelCallContext | undefined {
  return contexts.get(socket);
}

/** A ModelCallEntry holding at most one server (the last attached). */
export class ModelCallServerSlot implements ModelCallEntry {
  private serve: ServeConnection | undefined;

  serveWith(serve: ServeConnection): () => void {
    this.serve = serve;
    return () => {
      if (this.serve === serve) this.serve = undefined;
    };
  }

  /** The attached server, if any. */
  get current(): ServeConnection | undefined {
    return this.serve;
  }
}
