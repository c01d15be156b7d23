// Sums jest's per-package "Tests:" lines and node's test runner totals ("# pass N" in TAP, "ℹ pass N" in its spec
// reporter) from a `make test-unit` log into one closing line that any CI reader understands:
// `tests: N passed, N failed`. A jest suite that failed to run (it throws before any test, as the cluster suites
// do under CI=true without nats-server) counts no test, so those are counted apart. Above that line it names what
// failed (jest's FAIL files and ● tests, node's "not ok" tests): a CI log that keeps only its tail still says which
// test broke.
import { readFileSync } from 'node:fs';

const log = readFileSync(process.argv[2] ?? '', 'utf8');
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = new Set();
const suitesNotRun = new Set();
let lastFailedFile = '';
for (const rawLine of log.split('\n')) {
  // turbo prefixes each package's output with "<package>:test: ".
  const prefix = /^(\S+):test: /.exec(rawLine);
  const line = (prefix ? rawLine.slice(prefix[0].length) : rawLine).trim();
  const where = prefix ? `${prefix[1]} ` : '';
  const failedFile = /^FAIL (\S+)/.exec(line);
  if (failedFile) {
    lastFailedFile = `${where}${failedFile[1]}`;
    failures.add(lastFailedFile);
    continue;
  }
  const failedTest = /^● (.+)$/.exec(line);
  if (failedTest?.[1] === 'Test suite failed to run') suitesNotRun.add(lastFailedFile);
  else if (failedTest && !failedTest[1].startsWith('Console')) failures.add(`${where}  ● ${failedTest[1]}`);
  const failedNodeTest = /^not ok \d+ - (.+)$/.exec(line);
  if (failedNodeTest) failures.add(`${where}not ok: ${failedNodeTest[1]}`);
  const nodeTotal = /^(?:#|ℹ) (pass|fail|skipped|todo|cancelled) (\d+)$/.exec(line);
  if (nodeTotal) {
    const [, kind, count] = nodeTotal;
    if (kind === 'pass') passed += Number(count);
    else if (kind === 'fail' || kind === 'cancelled') failed += Number(count);
    else skipped += Number(count);
    continue;
  }
  const summary = /^Tests:\s+(.*)$/.exec(line);
  if (!summary?.[1]) continue;
  for (const [, count, kind] of summary[1].matchAll(/(\d+) (passed|failed|skipped|todo)/g)) {
    if (kind === 'passed') passed += Number(count);
    else if (kind === 'failed') failed += Number(count);
    else skipped += Number(count);
  }
}
if (failures.size > 0)
  process.stdout.write(`failed:\n${[...failures].map((failure) => `  ${failure}`).join('\n')}\n`);
const notRun = suitesNotRun.size > 0 ? `, ${suitesNotRun.size} suites failed to run` : '';
process.stdout.write(
  `tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}${notRun}\n`,
);
