// The shell commands written in the README and docs/, and what a test does with each: run it offline in a
// temporary directory, check that the command it names exists (a subcommand in the CLI's help, a make target), or
// skip it for a stated reason (it needs a running edge, a server, root). A command no rule covers is reported, so a
// new command in the docs gets a rule of its own instead of going unchecked.

export interface DocCommand {
  readonly file: string;
  /** 1-based line of the command's first line in its file. */
  readonly line: number;
  /** The command with continuation lines joined and its trailing comment removed. */
  readonly text: string;
}

export type CommandCheck =
  /** Run it with the edge's CLI from the checkout, in a temporary directory with its own edge.yaml. */
  | { kind: 'run'; argv: readonly string[] }
  /**
   * The CLI (`iop-edge` or `iop-node`) lists this subcommand in its help; `notRun` says why the command itself is
   * not run (it needs a running edge, a server, root).
   */
  | { kind: 'subcommand'; cli: 'iop-edge' | 'iop-node'; subcommand: string; notRun: string }
  /** `iop-node --help` answers. */
  | { kind: 'node-help' }
  /** The Makefile has this target. */
  | { kind: 'make-target'; target: string }
  | { kind: 'skip'; reason: string }
  | { kind: 'unknown' };

/** Every command of the ```bash blocks of one markdown file. */
export function shellCommands(markdown: string, file: string): DocCommand[] {
  const commands: DocCommand[] = [];
  const lines = markdown.split('\n');
  let inBlock = false;
  let pending: { line: number; parts: string[] } | undefined;
  lines.forEach((raw, index) => {
    if (/^```/.test(raw)) {
      inBlock = !inBlock && /^```(bash|sh)\s*$/.test(raw);
      return;
    }
    if (!inBlock) return;
    const text = raw.replace(/\s+#\s.*$/, '').trimEnd();
    if (pending === undefined) {
      if (text.trim() === '' || text.trimStart().startsWith('#')) return;
      pending = { line: index + 1, parts: [] };
    }
    const continued = text.endsWith('\\');
    pending.parts.push((continued ? text.slice(0, -1) : text).trim());
    if (!continued) {
      commands.push({ file, line: pending.line, text: pending.parts.join(' ') });
      pending = undefined;
    }
  });
  return commands;
}

/** Edge subcommands that work offline against a config file: the test runs them as written. */
const OFFLINE_EDGE_COMMANDS = [
  'config init',
  'config check',
  'node register',
  'node revoke',
  'keys create',
  'cluster keygen',
  'env',
];

/** Edge subcommands that talk to a running edge, or start one. */
const LIVE_EDGE_COMMANDS: Readonly<Record<string, string>> = {
  serve: 'starts the edge and runs until stopped',
  'nodes list': 'asks a running edge (admin API)',
  'node adopt': 'asks a running edge for what its node discovered',
  'config refresh': 'applies to a running edge',
  'smoke openai': 'sends requests to a running edge',
  usage: 'asks a running edge (admin API)',
  setup: 'installs a systemd service (needs root)',
};

/** What the test does with one command. `tempDir` replaces absolute paths the command writes to. */
export function checkOf(command: DocCommand, tempDir: string): CommandCheck {
  const words = command.text
    .replace(/^sudo\s+/, '')
    .replace(/^(\w+=\S*\s+)+/, '')
    .split(/\s+/);
  const [program, ...rest] = words;
  switch (program) {
    case 'iop-edge':
    case 'bin/iop-edge':
      return edgeCheck(rest, tempDir);
    case 'iop-node':
    case 'bin/iop-node':
      if (rest[0] === '--help') return { kind: 'node-help' };
      return {
        kind: 'subcommand',
        cli: 'iop-node',
        subcommand: rest[0] ?? '',
        notRun: rest[0] === 'run' ? 'connects to an edge and serves until stopped' : 'reads a node data dir',
      };
    case 'make':
      return { kind: 'make-target', target: rest[0] ?? 'all' };
    case 'curl':
      return { kind: 'skip', reason: 'asks the edge `make run` starts' };
    case 'nats-server':
      return { kind: 'skip', reason: 'starts a NATS server' };
    case 'pnpm':
      return rest[0] === 'bench'
        ? { kind: 'skip', reason: 'the benchmark takes minutes' }
        : { kind: 'unknown' };
    default:
      return { kind: 'unknown' };
  }
}

function edgeCheck(args: readonly string[], tempDir: string): CommandCheck {
  if (args[0] === '--help') return { kind: 'run', argv: ['--help'] };
  const two = args.slice(0, 2).join(' ');
  const one = args[0] ?? '';
  const subcommand = OFFLINE_EDGE_COMMANDS.includes(two) || two in LIVE_EDGE_COMMANDS ? two : one;
  if (OFFLINE_EDGE_COMMANDS.includes(subcommand)) {
    // A path the command writes to (`--out /etc/iop/fabric.key`) goes to the temporary directory instead.
    const argv = args.map((arg) => (arg.startsWith('/') ? `${tempDir}/${arg.split('/').pop() ?? ''}` : arg));
    return { kind: 'run', argv };
  }
  const notRun = LIVE_EDGE_COMMANDS[subcommand];
  return notRun === undefined
    ? { kind: 'unknown' }
    : { kind: 'subcommand', cli: 'iop-edge', subcommand, notRun };
}
