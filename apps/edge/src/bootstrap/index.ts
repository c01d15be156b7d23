export * from './artifact-set.js';
export * from './bootstrap-content.js';
export * from './bootstrap-handler.js';
export * from './bootstrap-surface.js';
export * from './bootstrap-urls.js';
export * from './errors.js';
export * from './install-scripts.js';
export * from './shell-quote.js';
