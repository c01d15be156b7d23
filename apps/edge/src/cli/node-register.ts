// `iop-edge node register <node-id> [--json] [--config P]`: creates or rotates the node's token in the node store
// under edge.data_dir and prints it once, with the ready-to-paste install lines (Linux/macOS and Windows, served
// by the bootstrap server) and the command that starts an already installed node. A running edge picks the change
// up without a restart (the store re-reads its file). The token is never logged, only printed here.
import os from 'node:os';
import { nodeFacingAddress } from '../bootstrap/node-facing-address.js';
import { readArtifactSet } from '../bootstrap/artifact-set.js';
import { formatInstallInstructions, installLines } from '../bootstrap/register-instructions.js';
import { readEdgeFingerprint } from '../tls/edge-identity.js';
import { EDGE_VERSION } from '../version.js';
import { isValidNodeId, createNodeStore } from '../node/node-store.js';
import { booleanFlag, parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';

export interface NodeRegisterDeps {
  /** Network interfaces (injected for tests); used to replace a wildcard listen host. */
  networkInterfaces?: () => ReturnType<typeof os.networkInterfaces>;
}

export function createNodeRegisterCommand(deps: NodeRegisterDeps = {}): CliCommand {
  return {
    path: ['node', 'register'],
    summary:
      "Create or rotate a node's token and print the one-line installers and the command that starts it.",
    usage: 'node register <node-id> [--json] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, { ...configFlag, json: { type: 'boolean' } });
      const [nodeId, ...extra] = flags.positionals;
      if (!nodeId) throw new UsageError('a node id is required');
      if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
      if (!isValidNodeId(nodeId)) {
        throw new UsageError(`invalid node id '${nodeId}': use 1-64 letters, digits, '.', '_' or '-'`);
      }
      const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
      if (!loaded) return 1;
      const config = loaded.config;
      const store = createNodeStore({ dataDir: config.edge.data_dir, configNodes: config.nodes });
      const { token, rotated } = await store.register(nodeId);
      const interfaces = deps.networkInterfaces ?? os.networkInterfaces;
      const edgeAddress = nodeFacingAddress(config, interfaces);
      const configured = config.nodes.some((node) => node.id === nodeId);
      const edgeFingerprint = await readEdgeFingerprint(config);
      const install = installLines(
        config,
        { nodeId, token, edgeAddress },
        {
          interfaces,
          artifactSet: readArtifactSet(config.bootstrap.artifact_dir),
          edgeVersion: EDGE_VERSION,
          edgeFingerprint,
        },
      );
      const pinFlag = edgeFingerprint ? ` --edge-fingerprint ${edgeFingerprint}` : '';
      const command = `iop-node run --edge ${edgeAddress} --node-id ${nodeId}${pinFlag}`;

      if (booleanFlag(flags, 'json')) {
        writeLine(
          io.stdout,
          JSON.stringify({
            node_id: nodeId,
            token,
            edge_address: edgeAddress,
            command,
            rotated,
            edge_fingerprint: install.edgeFingerprint,
            configured,
            bootstrap_url: install.publicUrl,
            install_unix: install.unix,
            install_unix_service: install.unixService,
            install_windows: install.windows,
          }),
        );
        return 0;
      }
      writeLine(
        io.stdout,
        rotated
          ? `Rotated the token of node ${nodeId}; the previous token no longer works.`
          : `Registered node ${nodeId}.`,
      );
      writeLine(io.stdout, `Token (shown only now; the edge keeps only its SHA-256): ${token}`);
      writeLine(io.stdout);
      for (const line of formatInstallInstructions(install)) writeLine(io.stdout, line);
      writeLine(io.stdout);
      writeLine(io.stdout, 'With iop-node already installed, start it with the token in its environment:');
      writeLine(io.stdout, `  IOP_NODE_TOKEN=${token} ${command}`);
      writeLine(io.stdout, 'or from a file only the node user can read:');
      writeLine(
        io.stdout,
        `  (umask 077 && mkdir -p ~/.iop/node && printf '%s' '${token}' > ~/.iop/node/token)`,
      );
      writeLine(io.stdout, `  ${command} --token-file ~/.iop/node/token`);
      if (!configured) {
        writeLine(io.stdout);
        writeLine(
          io.stdout,
          `Note: ${nodeId} is not under nodes[] in ${loaded.path}; it connects with an empty configuration ` +
            '(no adapters) until it is adopted (below) or you add it there.',
        );
      }
      writeLine(io.stdout);
      writeLine(
        io.stdout,
        `Next, when it connects (iop-edge nodes list): iop-edge node adopt ${nodeId}   ` +
          '(adds the model servers and agent CLIs it discovered, live)',
      );
      return 0;
    },
  };
}

// Re-exported: callers (and tests) know it from here.
export { nodeFacingAddress };

export const nodeRegisterCommand = createNodeRegisterCommand();
