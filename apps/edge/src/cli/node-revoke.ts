// `iop-edge node revoke <node-id> [--config P]`: removes the node's token from the node store. A running edge
// notices the changed store within half a second and disconnects the node (Goodbye `token-revoked`); the node's
// reconnect is then rejected. Tokens written into edge.yaml (`nodes[].token`, `token_sha256`) are not in the
// store: the command says so, and they are revoked by editing edge.yaml.
import { createNodeStore, isValidNodeId } from '../node/node-store.js';
import { parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';

export const nodeRevokeCommand: CliCommand = {
  path: ['node', 'revoke'],
  summary: "Revoke a node's token: a running edge disconnects the node within 2 s and refuses it afterwards.",
  usage: 'node revoke <node-id> [--config P]',
  async run(argv, io) {
    const flags = parseFlags(argv, configFlag);
    const [nodeId, ...extra] = flags.positionals;
    if (!nodeId) throw new UsageError('a node id is required');
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
    if (!isValidNodeId(nodeId)) throw new UsageError(`invalid node id '${nodeId}'`);
    const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
    if (!loaded) return 1;
    const config = loaded.config;
    const store = createNodeStore({ dataDir: config.edge.data_dir, configNodes: config.nodes });
    const removed = await store.revoke(nodeId);
    const configured = config.nodes.find((node) => node.id === nodeId);
    const configSecret =
      configured !== undefined && (configured.token !== '' || configured.token_sha256 !== '');
    if (removed) {
      writeLine(
        io.stdout,
        `Revoked the token of node ${nodeId}; a running edge disconnects it within 2 s and refuses it afterwards.`,
      );
    }
    if (configSecret) {
      writeLine(
        io.stderr,
        `${nodeId} also has a token in ${loaded.path} (nodes[].token / token_sha256): remove it there and run ` +
          "'iop-edge config refresh' to revoke that one.",
      );
    }
    if (!removed && !configSecret) {
      writeLine(io.stderr, `node ${nodeId} has no token in ${store.filePath}: nothing to revoke`);
      return 1;
    }
    return removed ? 0 : 1;
  },
};
