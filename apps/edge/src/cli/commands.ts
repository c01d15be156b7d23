// The edge CLI's command table. Add a command: write cli/<name>.ts exporting a CliCommand, list it here.
import type { CliCommand } from './command.js';
import { versionCommand } from './version.js';

export const commands: CliCommand[] = [versionCommand];
