// What surfaces show of a node's discovery (its one-line summary and its wire form for the admin API): the
// node layer's conversions, re-exported here because a surface imports the service and nothing below it.
export type { NodeDiscovered } from '../node/discovered.js';
export { discoverySummary, toWireDiscovery } from '../node/discovered.js';
