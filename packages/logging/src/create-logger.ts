// The pino implementation of Logger. Only the composition roots (cli/serve, cli/run, ...) build one; nothing else
// decides log levels, formats or which fields are secret.
import { pino, type Logger as PinoLogger } from 'pino';
import type { Logger } from './logger.js';

export interface LoggingOptions {
  level: string;
  /** json | pretty (pretty = one human-readable line per entry on stderr). */
  format: string;
  destination?: NodeJS.WritableStream;
}

/** Keys whose values are replaced before a line is written, wherever they appear. */
export const REDACTED_KEYS = [
  'token',
  'api_key',
  'apiKey',
  'authorization',
  'Authorization',
  'bearer_token',
  'admin_token',
  'password',
];

export function createLogger(options: LoggingOptions): Logger {
  const redact = {
    paths: REDACTED_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]),
    censor: '[redacted]',
  };
  const destination = options.destination ?? process.stderr;
  const instance: PinoLogger =
    options.format === 'pretty'
      ? pino({ level: options.level, redact, base: undefined }, prettyStream(destination))
      : pino({ level: options.level, redact, base: undefined }, destination);
  return wrap(instance);
}

function wrap(instance: PinoLogger): Logger {
  return {
    debug: (fields, message) => instance.debug(fields, message),
    info: (fields, message) => instance.info(fields, message),
    warn: (fields, message) => instance.warn(fields, message),
    error: (fields, message) => instance.error(fields, message),
    child: (bindings) => wrap(instance.child(bindings)),
  };
}

/** A minimal one-line formatter so the default output is readable without pino-pretty. */
function prettyStream(destination: NodeJS.WritableStream): { write(line: string): void } {
  return {
    write(line: string) {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        const { level, time, msg, ...rest } = entry;
        const fields = Object.entries(rest)
          .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
          .join(' ');
        // pino stamps every line (epoch ms); a line without one is printed without a stamp.
        const stamp = typeof time === 'number' ? new Date(time).toISOString() : '-';
        destination.write(`${stamp} ${levelName(level)} ${String(msg)}${fields ? ` ${fields}` : ''}\n`);
      } catch {
        destination.write(line);
      }
    },
  };
}

function levelName(level: unknown): string {
  const names: Record<number, string> = {
    10: 'TRACE',
    20: 'DEBUG',
    30: 'INFO',
    40: 'WARN',
    50: 'ERROR',
    60: 'FATAL',
  };
  return typeof level === 'number' ? (names[level] ?? String(level)) : String(level);
}
