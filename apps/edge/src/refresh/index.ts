// Live config refresh: the coordinator and its result shape (the runtime builds it; the admin API serves it).
export * from './config-refresher.js';
export * from './errors.js';
export * from './refresh-result.js';
export * from './serial-gate.js';
