// The tail phase (issue 46): p99 and p99.9 of non-streaming requests at a fixed open-loop rate, for the direct
// path, the two-relay floor (bench/lib/relays.mjs) and IOP, measured in alternating rounds in one run so that a
// drift of the machine's load does not land on one path. Each path's requests of all rounds are pooled before the
// percentiles are taken (a p99.9 needs thousands of requests: 3 rounds of 6 s at 500 req/s give 9,000, whose
// p99.9 is the 9th slowest). Reported per path: p50/p99/p99.9 and what each adds to direct; for IOP also the ratio
// of its added p99 (and p99.9) to the relays' — IOP's own share of the tail, on this machine, the day it is run.
import { fixedRate, percentile } from './load.mjs';

/**
 * @param {{ urls: { direct: string, relays: string, iop: string }, body: string, rate: number, rounds: number,
 *   durationMs: number, warmupMs: number, log?: (line: string) => void }} options
 *   `urls` are the full request URLs of the three paths.
 */
export async function tailPhase(options) {
  const { urls, body, rate, rounds, durationMs } = options;
  const names = Object.keys(urls);
  // Every path warms up at the rate first (the relays have just started; JIT after a start is not the steady state).
  for (const name of names) {
    options.log?.(`tail: warm-up ${name}`);
    await fixedRate({ url: urls[name], body, rate, durationMs: options.warmupMs });
  }
  const latencies = Object.fromEntries(names.map((name) => [name, []]));
  const errors = Object.fromEntries(names.map((name) => [name, 0]));
  for (let round = 0; round < rounds; round += 1) {
    // The order is reversed every other round, so no path always follows the same one.
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      options.log?.(`tail: round ${round + 1}/${rounds}, ${name}`);
      const records = [];
      const result = await fixedRate({ url: urls[name], body, rate, durationMs, records });
      for (const record of records) latencies[name].push(record.end - record.due);
      errors[name] += result.errors + result.non2xx;
    }
  }
  const paths = {};
  for (const name of names) {
    const sorted = Float64Array.from(latencies[name]).sort();
    paths[name] = {
      count: sorted.length,
      errors: errors[name],
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      p999: percentile(sorted, 0.999),
      max: sorted.length ? sorted[sorted.length - 1] : Number.NaN,
    };
  }
  const added = (name, q) => paths[name][q] - paths.direct[q];
  return {
    rate,
    rounds,
    round_ms: durationMs,
    paths,
    relays_added: { p50: added('relays', 'p50'), p99: added('relays', 'p99'), p999: added('relays', 'p999') },
    iop_added: { p50: added('iop', 'p50'), p99: added('iop', 'p99'), p999: added('iop', 'p999') },
    p99_ratio_to_relays: added('iop', 'p99') / added('relays', 'p99'),
    p999_ratio_to_relays: added('iop', 'p999') / added('relays', 'p999'),
  };
}
