// The many-node phase of `pnpm bench`: one fresh edge with `count` nodes pre-registered in its node store and the
// real bench node (openai_compat provider on the fake backend) in its config. Steps:
//   1. the bench node registers; requests through it at a fixed rate (100/s in `pnpm bench`), IOP and direct side
//      by side, give the edge's figures with no simulated node connected (baseline);
//   2. the node simulator registers every simulated node (real wire protocol and tokens, spread over loopback
//      source addresses): time to register all;
//   3. the nodes stay connected for `holdMs` (60 s in a full run) answering the edge's heartbeat pings, while the
//      same requests go through the bench node: x-iop-overhead-ms and IOP − direct latency with every node
//      connected; the edge's RSS is sampled every 5 s and /metrics fetched every 15 s (as Prometheus would);
//   4. at the end: `iop_nodes_connected`, the edge's disconnect counter, and the simulator's own count of open and
//      closed connections, of the edge's pings each node answered and of the pongs each got to its own pings
//      (none may have been dropped: a simulated node never reconnects, so a drop shows as a closed connection).
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { fixedRate } from './load.mjs';
import { openFilesLimit, startProcess } from './processes.mjs';
import { MODEL, repoRoot, startBenchNodeOn, startManyNodeEdge, waitServing } from './topology.mjs';

/** File descriptors a process needs beyond one per node connection (listeners, history DB, logs, libuv). */
const SPARE_FILES = 1024;

/** Ends with a clear message when the open-files limit cannot hold `count` connections in one process. */
export function checkOpenFiles(count) {
  const needed = count + SPARE_FILES;
  const { soft, hard } = openFilesLimit();
  if (hard < needed) {
    throw new Error(
      `--nodes ${count} needs ${needed} open files in the edge and in the simulator, but the hard limit ` +
        `(ulimit -Hn) is ${hard}: raise it (e.g. in /etc/security/limits.conf or the container's ulimits) or ` +
        `use fewer --nodes`,
    );
  }
  // Children get their soft limit raised when needed (startProcess openFiles).
  return { needed, soft, hard };
}

/** `/metrics` text of the edge's metrics listener (`host:port`). */
async function scrape(address) {
  return (await fetch(`http://${address}/metrics`)).text();
}

/** Sum of every series of `name` in a Prometheus text page. */
function metricSum(text, name) {
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm')))
    sum += Number(match[1]);
  return sum;
}

/** Asks the simulator for its STATUS line (it answers SIGUSR2). */
async function simulatorStatus(simulator) {
  const line = new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      simulator.child.stdout.off('data', onData);
      reject(new Error('the node simulator did not answer its status signal'));
    }, 10_000);
    const onData = (chunk) => {
      buffer += chunk.toString();
      const match = /STATUS open=(\d+) closed=(\d+) pings_min=(\d+) pings_total=(\d+) pongs_min=(\d+)/.exec(
        buffer,
      );
      if (!match) return;
      clearTimeout(timer);
      simulator.child.stdout.off('data', onData);
      resolve({
        open: Number(match[1]),
        closed: Number(match[2]),
        pingsMin: Number(match[3]),
        pingsTotal: Number(match[4]),
        pongsMin: Number(match[5]),
      });
    };
    simulator.child.stdout.on('data', onData);
  });
  simulator.child.kill('SIGUSR2');
  return line;
}

/** The same low-rate load on the IOP path and the direct path at once; latency and x-iop-overhead-ms. */
async function sideBySide({ openaiUrl, backendUrl, body, rate, durationMs }) {
  const [iop, direct] = await Promise.all([
    fixedRate({ url: `${openaiUrl}/v1/chat/completions`, body, rate, durationMs }),
    fixedRate({ url: `${backendUrl}/v1/chat/completions`, body, rate, durationMs }),
  ]);
  return {
    requests: iop.completed,
    errors: iop.errors + iop.non2xx,
    withOverheadHeader: iop.withOverheadHeader,
    overhead: iop.overheadHeader,
    latency: { p50: iop.p50, p95: iop.p95, p99: iop.p99 },
    direct: { p50: direct.p50, p95: direct.p95, p99: direct.p99 },
    added: { p50: iop.p50 - direct.p50, p95: iop.p95 - direct.p95, p99: iop.p99 - direct.p99 },
  };
}

/**
 * Runs the phase against the fake backend at `backendUrl`.
 * @param {{ count: number, backendUrl: string, holdMs: number, baselineMs: number, rate: number,
 *   heartbeatIntervalMs?: number, log: (text: string) => void }} options
 */
export async function manyNodesPhase(options) {
  const { count, backendUrl, holdMs, log } = options;
  const files = checkOpenFiles(count);
  const edge = await startManyNodeEdge(count, { backendUrl, openFiles: files.needed });
  const node = await startBenchNodeOn(edge);
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 16,
  });
  const simulator = { handle: undefined };
  try {
    await waitServing(edge.addresses.openai);
    const load = { openaiUrl: edge.addresses.openai, backendUrl, body, rate: options.rate };
    log(`${count} nodes: baseline requests with the bench node only`);
    await sideBySide({ ...load, durationMs: 1000 }); // warm-up (JIT, pooled connections), not counted
    const baselineCpuBefore = edge.cpuMs();
    const baseline = await sideBySide({ ...load, durationMs: options.baselineMs });
    const baselineCpuMs = edge.cpuMs() - baselineCpuBefore;
    const idleRssMb = edge.rssMb();

    log(`${count} nodes: registering`);
    const edgeCpuBefore = edge.cpuMs();
    simulator.handle = await startProcess({
      name: 'node-simulator',
      script: path.join(repoRoot, 'bench/node-simulator.mjs'),
      args: [
        '--edge',
        edge.addresses['node transport'],
        '--count',
        String(count),
        '--token-prefix',
        edge.tokenPrefix,
      ],
      ready: /REGISTERED count=(\d+) ms=(\S+) p50=(\S+) p99=(\S+)/,
      timeoutMs: 120_000,
      openFiles: files.needed,
    });
    const [, registered, totalMs, p50Ms, p99Ms] = simulator.handle.match.map(Number);
    const registerCpuMs = edge.cpuMs() - edgeCpuBefore;
    const rssAfterRegisterMb = edge.rssMb();

    log(
      `${count} nodes: holding them ${Math.round(holdMs / 1000)} s with heartbeats, requests through the node`,
    );
    const holdCpuBefore = edge.cpuMs();
    const rssSamples = [rssAfterRegisterMb];
    const scrapeMs = [];
    let sampling = true;
    const sampler = (async () => {
      for (let tick = 1; sampling; tick += 1) {
        await sleep(5000);
        if (!sampling) break;
        rssSamples.push(edge.rssMb());
        // Every 15 s, as a Prometheus server with its default interval would: the page holds every node's series.
        if (tick % 3 === 0) {
          const started = performance.now();
          await scrape(edge.addresses.metrics);
          scrapeMs.push(performance.now() - started);
        }
      }
    })();
    const connected = await sideBySide({ ...load, durationMs: holdMs });
    sampling = false;
    await sampler;
    const holdCpuMs = edge.cpuMs() - holdCpuBefore;
    rssSamples.push(edge.rssMb());

    const metrics = await scrape(edge.addresses.metrics);
    const status = await simulatorStatus(simulator.handle);
    const connectedGauge = Number(/^iop_nodes_connected (\S+)$/m.exec(metrics)?.[1] ?? NaN);
    const disconnects = metricSum(metrics, 'iop_node_disconnects_total');
    const connections = metricSum(metrics, 'iop_node_connections_total');
    return {
      count,
      registered,
      register_total_ms: totalMs,
      register_p50_ms: p50Ms,
      register_p99_ms: p99Ms,
      edge_cpu_ms_register: registerCpuMs,
      edge_idle_rss_mb: idleRssMb,
      edge_rss_after_register_mb: rssAfterRegisterMb,
      edge_rss_max_mb: Math.max(...rssSamples),
      // /metrics fetched every 15 s during the hold (ms each).
      metrics_scrape_ms: scrapeMs,
      hold_ms: holdMs,
      // Edge CPU per second with the same request rate: without the simulated nodes, and while they are held.
      edge_cpu_ms_per_s_baseline: baselineCpuMs / (options.baselineMs / 1000),
      edge_cpu_ms_per_s_held: holdCpuMs / (holdMs / 1000),
      // After the hold: the edge's view and the simulator's (the bench node is one more connected node).
      connected_gauge: connectedGauge,
      edge_node_connections_total: connections,
      edge_node_disconnects_total: disconnects,
      simulator_open: status.open,
      simulator_closed: status.closed,
      // Edge pings each node answered (an iop-node that pings the edge itself is rarely pinged back) and pongs
      // each node got from the edge for its own pings.
      edge_pings_min_per_node: status.pingsMin,
      edge_pings_total: status.pingsTotal,
      node_pongs_min_per_node: status.pongsMin,
      all_connected: status.open === count && status.closed === 0 && connectedGauge === count + 1,
      request_rate: options.rate,
      requests_without_nodes: baseline,
      requests_with_nodes: connected,
    };
  } finally {
    await simulator.handle?.stop();
    await node.stop();
    await edge.stop();
  }
}
