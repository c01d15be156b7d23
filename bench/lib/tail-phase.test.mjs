// Unit test of the tail phase (node --test bench/lib/).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { tailPhase } from './tail-phase.mjs';

// Three "paths" on loopback servers that answer after a fixed delay: the phase pools every round per path and
// reports what each adds to direct, so a slower path shows a larger p99 and the ratio follows from the two.
const servers = [];
const urls = {};
before(async () => {
  for (const [name, delayMs] of [
    ['direct', 1],
    ['relays', 6],
    ['iop', 11],
  ]) {
    const server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => setTimeout(() => response.end('{}'), delayMs));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    urls[name] = `http://127.0.0.1:${server.address().port}/v1/chat/completions`;
  }
});
after(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

test('pools the rounds per path and reports p99 / p99.9 added to direct, and the ratio to the relays', async () => {
  const logged = [];
  const result = await tailPhase({
    urls,
    body: '{}',
    rate: 100,
    rounds: 2,
    durationMs: 300,
    warmupMs: 100,
    log: (line) => logged.push(line),
  });
  assert.equal(result.rate, 100);
  assert.equal(result.rounds, 2);
  for (const name of ['direct', 'relays', 'iop']) {
    assert.equal(result.paths[name].count, 60, `${name}: 2 rounds × 30 requests`);
    assert.equal(result.paths[name].errors, 0);
    assert.ok(result.paths[name].p999 >= result.paths[name].p99);
  }
  assert.ok(result.relays_added.p50 > 2, `relays add ~5 ms, got ${result.relays_added.p50}`);
  assert.ok(result.iop_added.p50 > result.relays_added.p50);
  assert.equal(result.p99_ratio_to_relays, result.iop_added.p99 / result.relays_added.p99);
  // Alternating order: the second round runs the paths in reverse.
  assert.deepEqual(
    logged.filter((line) => line.includes('round')),
    [
      'tail: round 1/2, direct',
      'tail: round 1/2, relays',
      'tail: round 1/2, iop',
      'tail: round 2/2, iop',
      'tail: round 2/2, relays',
      'tail: round 2/2, direct',
    ],
  );
});
