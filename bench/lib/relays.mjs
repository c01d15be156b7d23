// The two-relay floor: two `bench/plain-relay.mjs` processes in a chain in front of a backend (an HTTP relay with
// no parsing, checks or bookkeeping). Two processes relaying a request is what the IOP path (edge + node) is at
// the least, so "2 relays" minus direct is what any two-process relay pays on this machine (process wake-ups,
// loopback hops), measured in the same run as IOP rather than assumed. Used by bench/floor.mjs and the tail phase.
import path from 'node:path';
import { startProcess } from './processes.mjs';
import { repoRoot } from './topology.mjs';

/** Starts one relay forwarding to `target`: its process handle, with `url`. */
export async function startRelay(target, name) {
  const relay = await startProcess({
    name,
    script: path.join(repoRoot, 'bench/plain-relay.mjs'),
    args: ['--target', target],
    ready: /RELAY_URL=(\S+)/,
  });
  return { ...relay, url: relay.match[1] };
}

/**
 * Relay one → `backendUrl`, relay two → relay one. `{ one, two }`: process handles with `url`; the two-relay
 * path is `two.url`. The processes stop with the others (processes.mjs stopAll) or with `stop()`.
 */
export async function startRelayChain(backendUrl) {
  const one = await startRelay(backendUrl, 'relay-1');
  const two = await startRelay(one.url, 'relay-2');
  return { one, two };
}
