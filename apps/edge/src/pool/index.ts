export * from './provider-pool.js';
export * from './errors.js';
export * from './clock.js';
export * from './shared-pool.js';
