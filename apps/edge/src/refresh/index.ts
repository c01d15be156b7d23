// Live config refresh: the coordinator, its result shape, and the surface that wires it into the runtime.
export * from './config-refresher.js';
export * from './errors.js';
export * from './refresh-result.js';
export * from './refresh-surface.js';
export * from './serial-gate.js';
