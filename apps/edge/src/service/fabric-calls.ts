// Calls to the other edges of a fabric, as the surfaces use them: state only one edge holds (an A2A task, a
// background response) is looked up on the others when this edge does not have it. The cluster implements them
// over NATS (cluster/peer-calls.ts, cluster/peer-streams.ts); surfaces see only this module, and the runtime
// hands them the object (none on a single edge). Re-exports only.
export type { PeerAnswer as FabricAnswer, PeerCalls as FabricCalls } from '../cluster/peer-calls.js';
export { PeerStreamError as FabricStreamError } from '../cluster/peer-streams.js';
