// Public API of @iop/clock: the Clock every app injects, the system clock, sleep, and a manual clock for tests.
export { sleep, systemClock, type Clock, type ClockTimer, type TimerOptions } from './clock.js';
export { ManualClock } from './manual-clock.js';
