// Dispatches argv to a command. Shared by main.ts and tests (which pass their own io and commands).
import { commands as defaultCommands } from './commands.js';
import { UsageError, writeLine, type CliCommand, type CliIo } from './command.js';

export async function runCli(
  argv: string[],
  io: CliIo,
  commands: CliCommand[] = defaultCommands,
): Promise<number> {
  const first = argv[0];
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    printHelp(io, commands);
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') return runCli(['version', ...argv.slice(1)], io, commands);
  const command = commands.find((candidate) => candidate.path.every((word, index) => argv[index] === word));
  if (!command) {
    writeLine(io.stderr, `iop-node: unknown command '${first}'. Run 'iop-node --help'.`);
    return 2;
  }
  const rest = argv.slice(command.path.length);
  if (rest.includes('--help') || rest.includes('-h')) {
    writeLine(io.stdout, `usage: iop-node ${command.usage}`);
    writeLine(io.stdout, command.summary);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    const name = command.path.join(' ');
    if (error instanceof UsageError) {
      writeLine(io.stderr, `iop-node ${name}: ${error.message}`);
      writeLine(io.stderr, `usage: iop-node ${command.usage}`);
      return 2;
    }
    writeLine(io.stderr, `iop-node ${name}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

function printHelp(io: CliIo, commands: CliCommand[]): void {
  writeLine(io.stdout, 'iop-node — IOP node agent: runs CLI agents and model servers for an edge');
  writeLine(io.stdout);
  writeLine(io.stdout, 'Commands:');
  for (const command of commands) {
    writeLine(io.stdout, `  ${command.path.join(' ').padEnd(8)}  ${command.summary}`);
    writeLine(io.stdout, `            iop-node ${command.usage}`);
  }
}
