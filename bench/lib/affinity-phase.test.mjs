// Cross-process test of the affinity phase (node --test bench/lib/): a small workload through the real
// `iop-edge serve` and `iop-node run` from the built workspace, with the prefix-cache backends as their own
// process, every listener on 127.0.0.1 with a port chosen at run time. Needs the build (pnpm exec turbo run build).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { affinityPhase, affinityShape, formatAffinityRows } from './affinity-phase.mjs';
import { stopAll } from './processes.mjs';
import { removeTempDirs, repoRoot } from './topology.mjs';

const shape = {
  ...affinityShape(true),
  conversations: 4,
  turns: 3,
  concurrency: 4,
  thinkMs: [0, 5],
  startSpreadMs: 0,
  systemTokens: 100,
  taskTokens: 100,
  turnTokens: 20,
  backend: {
    baseMs: 1,
    msPerUnseenToken: 0.01,
    capacityTokens: 100_000,
    answerTokens: 4,
    tokenIntervalMs: 0,
  },
};

describe('affinity phase through a real edge and node', () => {
  after(async () => {
    await stopAll();
    await removeTempDirs();
  });

  it(
    'runs every turn of every conversation through the edge within the providers capacity, and reports on against off',
    { timeout: 180_000 },
    async () => {
      for (const built of ['apps/edge/dist/main.js', 'apps/node/dist/main.js'])
        assert.ok(
          existsSync(path.join(repoRoot, built)),
          `${built} is missing: build first (pnpm exec turbo run build)`,
        );
      const lines = [];
      const result = await affinityPhase({ quick: true, shape, log: (line) => lines.push(line) });
      const { off, on, on_hash: onHash, pinned } = result.runs;
      const turns = shape.conversations * shape.turns;
      for (const run of [off, pinned]) {
        assert.equal(run.errors, 0, JSON.stringify(run.first_errors));
        assert.equal(run.completed, turns);
        // The backends saw exactly the workload's requests (the readiness ping is outside the counted window).
        assert.equal(
          run.backends.reduce((sum, stats) => sum + stats.requests, 0),
          turns,
        );
        assert.ok(run.backend_max_in_flight <= shape.providerCapacity);
      }
      // The edge names the provider of every turn, one of the four.
      for (const provider of Object.keys(off.providers)) assert.match(provider, /^p[0-3]$/);
      assert.equal(
        Object.values(off.providers).reduce((sum, count) => sum + count, 0),
        turns,
      );
      assert.equal(pinned.backend_follow_up_hit_rate, 1);
      assert.equal(result.ttft_p50_off_ms, off.ttft.p50);
      if (result.on_skipped) {
        // A build without affinity: the edge's config check named the field, and the on runs are absent.
        assert.equal(on, null);
        assert.equal(onHash, null);
        assert.equal(result.ttft_p50_on_ms, null);
        assert.ok(
          lines.some((line) => /unknown key 'affinity'/.test(line)),
          lines.join('\n'),
        );
        assert.match(formatAffinityRows(result)[1][2], /rejects models\[\]\.affinity/);
      } else {
        for (const run of [on, onHash]) {
          assert.equal(run.errors, 0, JSON.stringify(run.first_errors));
          assert.equal(run.completed, turns);
          assert.ok(run.backend_max_in_flight <= shape.providerCapacity);
        }
        // Four conversations, four providers with free capacity: every follow-up stays where its conversation is.
        assert.equal(on.same_provider_follow_ups, on.follow_ups);
        assert.equal(on.backend_follow_up_hit_rate, 1);
        assert.ok(on.affinity_metric, 'the edge exports iop_affinity_total');
        assert.equal(result.ttft_p50_ratio, on.ttft.p50 / off.ttft.p50);
      }
    },
  );
});
