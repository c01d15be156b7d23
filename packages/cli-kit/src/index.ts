// Public API of @iop/cli-kit: the command shape, UsageError, flag parsing and line output shared by both CLIs.
export { UsageError, writeLine, type CliCommand } from './cli-command.js';
export { writeTable } from './write-table.js';
export { parseFlags, stringFlag, booleanFlag, integerFlag, type ParsedFlags } from './flags.js';
