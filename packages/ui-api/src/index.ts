export type * from './ui-api-types.js';
