// Dispatches argv to a command. Shared by main.ts and tests (which pass their own io).
import { commands as defaultCommands } from './commands.js';
import { UsageError, writeLine, type CliCommand, type CliIo } from './command.js';

/** Flags every command accepts that take a value; they may stand before the command words. */
const GLOBAL_VALUE_FLAGS = new Set(['--config', '-c']);

export async function runCli(
  rawArgv: string[],
  io: CliIo,
  commands: CliCommand[] = defaultCommands,
): Promise<number> {
  const argv = moveGlobalFlagsLast(rawArgv);
  const words = argv.filter((word) => !word.startsWith('-'));
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    printHelp(io, commands);
    return argv.length === 0 ? 2 : 0;
  }
  const command = findCommand(words, commands);
  if (!command) {
    writeLine(io.stderr, `iop-edge: unknown command '${words.join(' ')}'. Run 'iop-edge --help'.`);
    return 2;
  }
  const rest = removePath(argv, command.path);
  if (rest.includes('--help') || rest.includes('-h')) {
    writeLine(io.stdout, `usage: iop-edge ${command.usage}`);
    writeLine(io.stdout, command.summary);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      writeLine(io.stderr, `iop-edge ${command.path.join(' ')}: ${error.message}`);
      writeLine(io.stderr, `usage: iop-edge ${command.usage}`);
      return 2;
    }
    writeLine(
      io.stderr,
      `iop-edge ${command.path.join(' ')}: ${error instanceof Error ? error.message : String(error)}`,
    );
    return 1;
  }
}

/** `iop-edge --config x.yaml config check` → `config check --config x.yaml`, so command words match. */
function moveGlobalFlagsLast(argv: string[]): string[] {
  const rest: string[] = [];
  const globals: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const word = argv[index] ?? '';
    const next = argv[index + 1];
    if (GLOBAL_VALUE_FLAGS.has(word) && next !== undefined) {
      globals.push(word, next);
      index += 1;
    } else {
      rest.push(word);
    }
  }
  return [...rest, ...globals];
}

function findCommand(words: string[], commands: CliCommand[]): CliCommand | undefined {
  let best: CliCommand | undefined;
  for (const command of commands) {
    const matches = command.path.every((word, index) => words[index] === word);
    if (matches && (!best || command.path.length > best.path.length)) best = command;
  }
  return best;
}

/** Removes the command's words (first occurrences, in order), keeping flags and their values in place. */
function removePath(argv: string[], path: string[]): string[] {
  const rest = [...argv];
  for (const word of path) {
    const index = rest.indexOf(word);
    if (index >= 0) rest.splice(index, 1);
  }
  return rest;
}

function printHelp(io: CliIo, commands: CliCommand[]): void {
  writeLine(io.stdout, 'iop-edge — controller of an IOP execution group');
  writeLine(io.stdout);
  writeLine(io.stdout, 'Commands:');
  const width = Math.max(...commands.map((command) => command.usage.length));
  for (const command of [...commands].sort((a, b) => a.usage.localeCompare(b.usage))) {
    writeLine(io.stdout, `  ${command.usage.padEnd(width)}  ${command.summary}`);
  }
}
