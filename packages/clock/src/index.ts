// Public API of @iop/clock: the Clock every app injects, the system clock, sleep, repeat, and a manual clock for tests.
export { repeat, sleep, systemClock, type Clock, type ClockTimer, type TimerOptions } from './clock.js';
export { ManualClock } from './manual-clock.js';
