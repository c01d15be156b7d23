// Sums jest's per-package "Tests:" lines and node's test runner totals ("# pass N" in TAP, "ℹ pass N" in its spec
// reporter) from a `make test-unit` log into one closing line that any CI reader understands:
// `tests: N passed, N failed`.
import { readFileSync } from 'node:fs';

const log = readFileSync(process.argv[2] ?? '', 'utf8');
let passed = 0;
let failed = 0;
let skipped = 0;
for (const line of log.split('\n')) {
  const nodeTotal = /^(?:#|ℹ) (pass|fail|skipped|todo|cancelled) (\d+)$/.exec(line.trim());
  if (nodeTotal) {
    const [, kind, count] = nodeTotal;
    if (kind === 'pass') passed += Number(count);
    else if (kind === 'fail' || kind === 'cancelled') failed += Number(count);
    else skipped += Number(count);
    continue;
  }
  const summary = /Tests:\s+(.*)$/.exec(line);
  if (!summary?.[1]) continue;
  for (const [, count, kind] of summary[1].matchAll(/(\d+) (passed|failed|skipped|todo)/g)) {
    if (kind === 'passed') passed += Number(count);
    else if (kind === 'failed') failed += Number(count);
    else skipped += Number(count);
  }
}
process.stdout.write(`tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
