// The iop-node command table: one import and one entry per command.
import type { CliCommand } from './command.js';
import { historyCommand } from './history-command.js';
import { runCommand } from './run-command.js';
import { versionCommand } from './version-command.js';

export const commands: CliCommand[] = [runCommand, versionCommand, historyCommand];
