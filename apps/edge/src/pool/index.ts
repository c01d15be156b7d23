export * from './provider-pool.js';
export * from './errors.js';
