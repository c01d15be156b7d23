// A connected loopback TCP pair for tests: the listener is closed as soon as the one connection is accepted, and
// `destroy()` tears both sockets down (use it in afterEach).
import net from 'node:net';

export interface SocketPair {
  client: net.Socket;
  server: net.Socket;
  destroy(): void;
}

export async function socketPair(options: { serverAllowHalfOpen?: boolean } = {}): Promise<SocketPair> {
  const listener = net.createServer({ allowHalfOpen: options.serverAllowHalfOpen ?? false });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address() as net.AddressInfo;
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect(address.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  const server = await accepted;
  // Stop listening now; close()'s callback would wait for the accepted connection to end.
  listener.close();
  return {
    client,
    server,
    destroy() {
      client.destroy();
      server.destroy();
    },
  };
}

/** Resolves after `ms` milliseconds (bounded waits in tests). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Settles with 'pending' if the promise has not settled within `ms`. */
export async function stateWithin<T>(
  promise: Promise<T>,
  ms: number,
): Promise<'resolved' | 'rejected' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.then(
        () => 'resolved' as const,
        () => 'rejected' as const,
      ),
      new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
