// An in-memory CliIo: captured stdout/stderr and a signal source the test fires by hand.
import { PassThrough } from 'node:stream';
import type { CliIo } from '../command.js';

export interface MemoryIo extends CliIo {
  out(): string;
  err(): string;
  /** Delivers a signal to the subscribed handlers. */
  signal(signal: NodeJS.Signals): void;
  subscribers(): number;
}

export function memoryIo(env: NodeJS.ProcessEnv = {}, cwd = process.cwd()): MemoryIo {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const handlers = new Set<(signal: NodeJS.Signals) => void>();
  return {
    stdout,
    stderr,
    env,
    cwd,
    onSignal: (handler) => {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    out: () => out,
    err: () => err,
    signal: (signal) => handlers.forEach((handler) => handler(signal)),
    subscribers: () => handlers.size,
  };
}
