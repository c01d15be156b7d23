// The edge CLI's command table. Add a command: write cli/<name>.ts exporting a CliCommand, list it here.
import { bootstrapPackCommand } from './bootstrap-pack.js';
import { clusterKeygenCommand } from './cluster-keygen.js';
import type { CliCommand } from './command.js';
import { configCheckCommand } from './config-check.js';
import { configInitCommand } from './config-init.js';
import { configPrintCommand } from './config-print.js';
import { configRefreshCommand } from './config-refresh.js';
import { consoleCommand } from './console.js';
import { envCommand } from './env.js';
import { keysCreateCommand } from './keys-create.js';
import { usageCommand } from './usage.js';
import { nodeAdoptCommand } from './node-adopt.js';
import { nodeRegisterCommand } from './node-register.js';
import { nodeRevokeCommand } from './node-revoke.js';
import { nodesListCommand } from './nodes-list.js';
import { serveCommand } from './serve.js';
import { setupCommand } from './setup.js';
import { smokeOpenAICommand } from './smoke-openai.js';
import { versionCommand } from './version.js';

export const commands: CliCommand[] = [
  versionCommand,
  configCheckCommand,
  configPrintCommand,
  configInitCommand,
  configRefreshCommand,
  envCommand,
  nodesListCommand,
  serveCommand,
  consoleCommand,
  nodeRegisterCommand,
  nodeAdoptCommand,
  nodeRevokeCommand,
  keysCreateCommand,
  clusterKeygenCommand,
  usageCommand,
  smokeOpenAICommand,
  bootstrapPackCommand,
  setupCommand,
];
