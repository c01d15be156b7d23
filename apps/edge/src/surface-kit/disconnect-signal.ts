// The run-cancel signal of a client connection, shared by every surface that runs something for a request.
import type { Socket } from 'node:net';

const DISCONNECT = Symbol('iopDisconnect');

/**
 * The run-cancel signal of a client connection, aborted when the connection closes. One per connection, not per
 * request (an AbortController costs ~2 µs to make): a connection closes between responses only when idle, with
 * no run attached, so an abort always means a client that left before its response finished — the same cases
 * as aborting when the response closes unfinished. Every run removes its listeners when it ends, so a
 * keep-alive connection does not accumulate them.
 */
export function disconnectSignal(socket: Socket): AbortSignal {
  const holder = socket as Socket & { [DISCONNECT]?: AbortController };
  let controller = holder[DISCONNECT];
  if (!controller) {
    const created = new AbortController();
    controller = created;
    holder[DISCONNECT] = created;
    socket.once('close', () => created.abort(new Error('client disconnected')));
  }
  return controller.signal;
}
