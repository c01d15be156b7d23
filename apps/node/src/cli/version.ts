// The agent's version, reported at registration and by `iop-node version`. Kept equal to apps/node/package.json
// by a test, because single-file builds cannot read package.json at run time.
export const AGENT_VERSION = '0.1.0';
