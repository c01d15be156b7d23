export { SessionRegistry, SessionLimitError } from './session-registry.js';
export type { LogicalSession, SessionEntry, SessionRegistryOptions } from './session-registry.js';
