// `iop-edge serve [--config P]`: load and validate edge.yaml, start the runtime (node transport + the default
// surfaces), print where it listens, and run until SIGINT/SIGTERM, then shut down cleanly (Goodbye `shutdown`
// to nodes, surfaces closed). Exit 1 with every config issue when the config is invalid.
import { securityWarnings, type EdgeConfig } from '@iop/config';
import { startEdgeRuntime, type EdgeRuntime } from '../edge-runtime.js';
import { createLogger, type Logger } from '../logging.js';
import type { SurfaceFactory } from '../surface.js';
import { defaultSurfaces } from '../surfaces.js';
import { parseFlags, stringFlag, writeLine, type CliCommand, type CliIo } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';

/** Delivers termination signals; returns a function that stops listening. */
export type SignalSource = (handler: (signal: string) => void) => () => void;

export const processSignals: SignalSource = (handler) => {
  const onSignal = (signal: NodeJS.Signals) => handler(signal);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
};

export interface ServeDeps {
  signals?: SignalSource;
  surfaces?: SurfaceFactory[];
  createLogger?: (config: EdgeConfig, io: CliIo) => Logger;
  /** Called once the runtime is up (tests use it to reach the runtime). */
  onStarted?: (runtime: EdgeRuntime) => void;
}

export function createServeCommand(deps: ServeDeps = {}): CliCommand {
  return {
    path: ['serve'],
    summary: 'Run the edge: node transport and the enabled surfaces, until SIGINT/SIGTERM.',
    usage: 'serve [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, configFlag);
      const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
      if (!loaded) return 1;
      const config = loaded.config;
      const logger = (deps.createLogger ?? defaultLogger)(config, io);
      // Allowed but unsafe settings: on the terminal and in the log, at every start.
      for (const warning of securityWarnings(config)) {
        writeLine(io.stderr, `WARNING: ${warning}`);
        logger.warn({ security: true }, warning);
      }
      // Subscribe before starting so a signal during startup is not lost.
      let signalled: (signal: string) => void = () => undefined;
      const stopSignal = new Promise<string>((resolve) => (signalled = resolve));
      const unsubscribe = (deps.signals ?? processSignals)((signal) => signalled(signal));
      let runtime: EdgeRuntime;
      try {
        runtime = await startEdgeRuntime({
          config,
          configPath: loaded.path,
          logger,
          surfaces: deps.surfaces ?? defaultSurfaces,
        });
      } catch (error) {
        unsubscribe();
        writeLine(io.stderr, `iop-edge serve: ${error instanceof Error ? error.message : String(error)}`);
        return 1;
      }
      // One write for the whole block: a process reading our stdout (a supervisor, the e2e tests) that has seen
      // one listening line has seen them all, whatever order the surfaces start in.
      writeLine(
        io.stdout,
        [
          `iop-edge serving (config ${loaded.path})`,
          `  node transport  ${runtime.transportAddress}${config.edge.tls.enabled ? ' (tls)' : ''}`,
          ...runtime.surfaces.map((surface) => `  ${surface.name.padEnd(15)} ${surface.address}`),
        ].join('\n'),
      );
      deps.onStarted?.(runtime);
      const signal = await stopSignal;
      unsubscribe();
      logger.info({ signal }, 'termination signal received');
      await runtime.stop('shutdown');
      writeLine(io.stdout, 'iop-edge stopped');
      return 0;
    },
  };
}

function defaultLogger(config: EdgeConfig, io: CliIo): Logger {
  return createLogger({ level: config.logging.level, format: config.logging.format, destination: io.stderr });
}

export const serveCommand = createServeCommand();
