export * from './messages.js';
export * from './run-event-part.js';
