#!/usr/bin/env node
// The affinity phase of `pnpm bench` on its own (bench/lib/affinity-phase.mjs): four prefix-cache backends behind
// one model, the multi-turn agent workload with affinity off and on. Prints the figures and writes them as JSON
// (`--out`, default bench/results/affinity.json). Flags: --quick (fewer conversations), --out FILE.
import { mkdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { affinityPhase, formatAffinityRows } from './lib/affinity-phase.mjs';
import { stopAll } from './lib/processes.mjs';
import { removeTempDirs, repoRoot } from './lib/topology.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: path.join(repoRoot, 'bench/results/affinity.json') },
  },
});

for (const built of ['apps/edge/dist/main.js', 'apps/node/dist/main.js']) {
  if (!existsSync(path.join(repoRoot, built))) {
    process.stderr.write(`${built} is missing: build first (pnpm exec turbo run build)\n`);
    process.exit(1);
  }
}

const log = (text) => process.stderr.write(`[bench] ${text}\n`);
try {
  const result = await affinityPhase({ quick: flags.quick, log });
  await mkdir(path.dirname(flags.out), { recursive: true });
  await writeFile(flags.out, `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`);
  const rows = formatAffinityRows(result);
  const width = Math.max(...rows.map(([measure]) => measure.length));
  for (const [measure, value, note] of rows)
    process.stdout.write(`${measure.padEnd(width)}  ${value}${note ? `  [${note}]` : ''}\n`);
  process.stdout.write(`\nwritten ${path.relative(process.cwd(), flags.out)}\n`);
} catch (error) {
  process.stderr.write(`affinity bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
  await removeTempDirs();
}
