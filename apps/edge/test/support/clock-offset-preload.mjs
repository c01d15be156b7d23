// Test support, preloaded with `--import` (clockOffsetEnv in e2e-processes.ts): runs this process's wall clock
// IOP_TEST_CLOCK_OFFSET_MS ahead (negative: behind), as an edge on a host whose clock is off would see it.
const offsetMs = Number(process.env.IOP_TEST_CLOCK_OFFSET_MS ?? '0');
if (Number.isFinite(offsetMs) && offsetMs !== 0) {
  const realNow = Date.now;
  Date.now = () => realNow() + offsetMs;
}
