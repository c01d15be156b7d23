#!/usr/bin/env node
// The agent-fabric phase (issue 42; bench/lib/agent-fabric-phase.mjs) on its own: (a) 4 agents × 5 model calls on
// a node of max_concurrency 2, (b) an agent co-placed with its model's provider against one on a node elsewhere.
// Prints the figures and writes them as JSON (`--out`, default bench/results/agents.json). Flags: --quick, --out, --link-delay-ms N
// (what node B's link to the edge adds each way in part (b), default 5).
import { mkdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { agentFabricPhase, formatAgentFabricRows } from './lib/agent-fabric-phase.mjs';
import { stopAll } from './lib/processes.mjs';
import { removeTempDirs, repoRoot } from './lib/topology.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'link-delay-ms': { type: 'string', default: '5' },
    out: { type: 'string', default: path.join(repoRoot, 'bench/results/agents.json') },
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
  const result = await agentFabricPhase({
    quick: flags.quick,
    linkDelayMs: Number(flags['link-delay-ms']),
    log,
  });
  await mkdir(path.dirname(flags.out), { recursive: true });
  await writeFile(flags.out, `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`);
  const rows = formatAgentFabricRows(result);
  const width = Math.max(...rows.map(([measure]) => measure.length));
  for (const [measure, value, note] of rows)
    process.stdout.write(`${measure.padEnd(width)}  ${value}${note ? `  [${note}]` : ''}\n`);
  process.stdout.write(`\nwritten ${path.relative(process.cwd(), flags.out)}\n`);
} catch (error) {
  process.stderr.write(`agents bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
  await removeTempDirs();
}
