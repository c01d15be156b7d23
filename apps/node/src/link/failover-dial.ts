// Several edges of one cluster (`--edge a:19090,b:19090`): each connect attempt tries the edge that worked last
// first, then the others in order, so a node whose edge went away registers with another one on its next attempt
// (within the reconnect policy: one attempt per retry interval). One address behaves exactly like its dialer.
import type { FramedConnection } from '@iop/wire';
import type { ConnectFunction } from './dial.js';
import { LinkError } from './link-error.js';

export interface FailoverDialer {
  connect: ConnectFunction;
  /** Index of the address the next attempt tries first. */
  readonly current: number;
}

export function createFailoverDialer(dialers: readonly ConnectFunction[]): FailoverDialer {
  if (dialers.length === 0) throw new Error('at least one edge address is required');
  let current = 0;
  const connect: ConnectFunction = async (signal) => {
    const failures: string[] = [];
    for (let step = 0; step < dialers.length; step++) {
      const index = (current + step) % dialers.length;
      const dial = dialers[index];
      try {
        const connection: FramedConnection = await dial(signal);
        current = index;
        return connection;
      } catch (error) {
        // A pinned identity that does not match is not a dead edge: stop, as the single-edge dialer does.
        if (error instanceof LinkError && error.code !== 'connect_failed') throw error;
        if (dialers.length === 1 || signal.aborted) throw error;
        failures.push(error instanceof Error ? error.message : String(error));
      }
    }
    current = (current + 1) % dialers.length;
    throw new LinkError('connect_failed', `no edge answered: ${failures.join('; ')}`);
  };
  return {
    connect,
    get current() {
      return current;
    },
  };
}
