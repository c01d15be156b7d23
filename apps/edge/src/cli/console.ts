// `iop-edge console [--config P]`: `serve` plus the interactive ops console on stdin/stdout (prompt `edge> `).
// The console is a diagnostic surface over the same EdgeService and event bus as every other surface; see
// console/ops-console.ts for its commands and the node label rule. `/exit`, end of input (Ctrl-D), Ctrl-C at
// an idle prompt, SIGINT or SIGTERM shut the edge down cleanly.
import type { EdgeConfig } from '@iop/config';
import { ConsolePrompt } from '../console/console-prompt.js';
import { OpsConsole } from '../console/ops-console.js';
import { startEdgeRuntime, type EdgeRuntime, type EdgeRuntimeOptions } from '../edge-runtime.js';
import { createLogger, type Logger } from '../logging.js';
import type { SurfaceFactory } from '../surface.js';
import { defaultSurfaces } from '../surfaces.js';
import { parseFlags, stringFlag, UsageError, writeLine, type CliCommand, type CliIo } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';
import { processSignals, type SignalSource } from './serve.js';

export interface ConsoleCommandDeps {
  signals?: SignalSource;
  surfaces?: SurfaceFactory[];
  createLogger?: (config: EdgeConfig, io: CliIo) => Logger;
  startRuntime?: (options: EdgeRuntimeOptions) => Promise<EdgeRuntime>;
  /** Whether stdin is an interactive terminal (default: its isTTY). */
  terminal?: boolean;
}

export function createConsoleCommand(deps: ConsoleCommandDeps = {}): CliCommand {
  return {
    path: ['console'],
    summary: 'Run the edge (like serve) with the interactive ops console on this terminal.',
    usage: 'console [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, configFlag);
      if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
      const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
      if (!loaded) return 1;
      const config = loaded.config;
      const logger = (deps.createLogger ?? defaultLogger)(config, io);
      const prompt = new ConsolePrompt({ input: io.stdin, output: io.stdout, terminal: deps.terminal });
      // Subscribe before starting so a signal during startup is not lost.
      let signalled: string | undefined;
      const unsubscribe = (deps.signals ?? processSignals)((signal) => {
        signalled = signal;
        prompt.stop();
      });
      let runtime: EdgeRuntime;
      try {
        runtime = await (deps.startRuntime ?? startEdgeRuntime)({
          config,
          configPath: loaded.path,
          logger,
          surfaces: deps.surfaces ?? defaultSurfaces,
        });
      } catch (error) {
        unsubscribe();
        writeLine(io.stderr, `iop-edge console: ${error instanceof Error ? error.message : String(error)}`);
        return 1;
      }
      const ops = new OpsConsole({
        service: runtime.service,
        events: runtime.events,
        write: prompt.writeLine,
        defaults: {
          node: config.console.node,
          adapter: config.console.adapter,
          target: config.console.target,
          sessionId: config.console.session_id,
        },
        logger: logger.child({ component: 'console' }),
      });
      try {
        writeLine(io.stdout, `iop-edge console (config ${loaded.path})`);
        writeLine(
          io.stdout,
          `  node transport  ${runtime.transportAddress}${config.edge.tls.enabled ? ' (tls)' : ''}`,
        );
        for (const surface of runtime.surfaces)
          writeLine(io.stdout, `  ${surface.name.padEnd(15)} ${surface.address}`);
        writeLine(io.stdout, 'type /help for commands, /exit to leave');
        ops.start();
        if (signalled === undefined) await prompt.run(ops);
      } finally {
        unsubscribe();
        await ops.close();
        if (signalled !== undefined) logger.info({ signal: signalled }, 'termination signal received');
        await runtime.stop('shutdown');
      }
      return 0;
    },
  };
}

function defaultLogger(config: EdgeConfig, io: CliIo): Logger {
  return createLogger({ level: config.logging.level, format: config.logging.format, destination: io.stderr });
}

export const consoleCommand = createConsoleCommand();
