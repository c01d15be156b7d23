// Starting CLI processes, behind a small interface so tests (and other platforms) can inject their own.
// Pipe processes use execa 9 in a new process group (detached) so a whole tree can be signalled at once;
// terminal processes run under a pseudo-terminal from @lydell/node-pty (a session leader, so also a group).
import { execa } from 'execa';
import pty from '@lydell/node-pty';

export interface LaunchSpec {
  command: string;
  args: string[];
  cwd: string;
  /** The complete environment of the child (nothing else is inherited). */
  env: Record<string, string>;
  /** Run under a pseudo-terminal (output is the terminal's byte stream, stdout and stderr merged). */
  terminal: boolean;
  /** `pipe` keeps stdin open for writes; `ignore` gives the child an empty stdin (like `</dev/null`). */
  stdin: 'pipe' | 'ignore';
  columns?: number;
  rows?: number;
  /** Run as this user (the node must be root). Supplementary groups are dropped (libuv's setgroups(0)). */
  user?: { uid: number; gid: number };
}

export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
  /** Set when the process could not be started at all (e.g. ENOENT). */
  spawnError?: string;
}

export type OutputStream = 'stdout' | 'stderr';

export interface LaunchedProcess {
  /** Undefined when the process could not be started (then `exited` reports spawnError). */
  readonly pid: number | undefined;
  readonly terminal: boolean;
  /** Output chunks as text, in arrival order. Register before awaiting anything. */
  onOutput(listener: (chunk: string, stream: OutputStream) => void): void;
  /** Writes to stdin (or types into the terminal). Errors of a closed pipe are swallowed. */
  write(text: string): void;
  /** Closes stdin (a terminal gets end-of-file, Ctrl-D). */
  endInput(): void;
  /** Interrupts the current turn: SIGINT to the process, or Ctrl-C typed into the terminal. */
  interrupt(): void;
  /**
   * Stops reading the child's output until resume() (its pipe fills and the child blocks on write): the consumer
   * of the lines is behind. Idempotent.
   */
  pause(): void;
  resume(): void;
  readonly exited: Promise<ProcessExit>;
}

export interface ProcessLauncher {
  launch(spec: LaunchSpec): LaunchedProcess;
}

/** The production launcher: execa for pipes, node-pty for terminals. */
export function createProcessLauncher(): ProcessLauncher {
  return {
    launch: (spec) => {
      // node-pty switches uid/gid without dropping the supplementary groups the node (root) has: refuse rather
      // than start an agent that still holds root's groups.
      if (spec.terminal && spec.user) {
        return failedLaunch(
          true,
          'run_as cannot start terminal profiles; use a pipe profile (terminal: false)',
        );
      }
      return spec.terminal ? launchTerminal(spec) : launchPipes(spec);
    },
  };
}

/** A launcher that starts every process as `user` (cli `run_as`). */
export function launcherAsUser(
  launcher: ProcessLauncher,
  user: { uid: number; gid: number },
): ProcessLauncher {
  return { launch: (spec) => launcher.launch({ ...spec, user }) };
}

function launchPipes(spec: LaunchSpec): LaunchedProcess {
  const listeners: Array<(chunk: string, stream: OutputStream) => void> = [];
  const subprocess = execa(spec.command, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: false,
    detached: true,
    stdin: spec.stdin,
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    cleanup: false,
    windowsHide: true,
    ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
  });
  for (const [stream, name] of [
    [subprocess.stdout, 'stdout'],
    [subprocess.stderr, 'stderr'],
  ] as const) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      for (const listener of listeners) listener(chunk, name);
    });
  }
  // A child that exits while we write gets EPIPE: that is reported through `exited`, not as a crash.
  subprocess.stdin?.on('error', () => undefined);
  const exited: Promise<ProcessExit> = subprocess.then(
    (result) => {
      const spawnError =
        result.failed && result.exitCode === undefined && !result.signal ? result.message : undefined;
      return {
        exitCode: result.exitCode ?? null,
        signal: result.signal ?? null,
        ...(spawnError ? { spawnError } : {}),
      };
    },
    (error: unknown) => ({ exitCode: null, signal: null, spawnError: String(error) }),
  );
  return {
    pid: subprocess.pid,
    terminal: false,
    onOutput: (listener) => listeners.push(listener),
    write: (text) => {
      if (subprocess.stdin && !subprocess.stdin.destroyed && subprocess.stdin.writable)
        subprocess.stdin.write(text);
    },
    endInput: () => {
      subprocess.stdin?.end();
    },
    interrupt: () => {
      if (subprocess.pid !== undefined) signalQuietly(subprocess.pid, 'SIGINT');
    },
    pause: () => subprocess.stdout?.pause(),
    resume: () => subprocess.stdout?.resume(),
    exited,
  };
}

function launchTerminal(spec: LaunchSpec): LaunchedProcess {
  const listeners: Array<(chunk: string, stream: OutputStream) => void> = [];
  let terminal: pty.IPty;
  try {
    terminal = pty.spawn(spec.command, spec.args, {
      name: 'xterm-256color',
      cols: spec.columns ?? 120,
      rows: spec.rows ?? 40,
      cwd: spec.cwd,
      env: spec.env,
    });
  } catch (error) {
    return failedLaunch(true, error instanceof Error ? error.message : String(error));
  }
  let ended = false;
  terminal.onData((chunk) => {
    for (const listener of listeners) listener(chunk, 'stdout');
  });
  const exited = new Promise<ProcessExit>((resolve) => {
    terminal.onExit(({ exitCode, signal }) => {
      ended = true;
      resolve({ exitCode: signal ? null : exitCode, signal: signal ? signalName(signal) : null });
    });
  });
  return {
    pid: terminal.pid,
    terminal: true,
    onOutput: (listener) => listeners.push(listener),
    write: (text) => {
      if (!ended) terminal.write(text);
    },
    endInput: () => {
      if (!ended) terminal.write('\u0004');
    },
    interrupt: () => {
      if (!ended) terminal.write('\u0003');
    },
    pause: () => {
      if (!ended) terminal.pause();
    },
    resume: () => {
      if (!ended) terminal.resume();
    },
    exited,
  };
}

function failedLaunch(terminal: boolean, message: string): LaunchedProcess {
  return {
    pid: undefined,
    terminal,
    onOutput: () => undefined,
    write: () => undefined,
    endInput: () => undefined,
    interrupt: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
    exited: Promise.resolve({ exitCode: null, signal: null, spawnError: message }),
  };
}

function signalName(signal: number): string {
  const names: Record<number, string> = { 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM' };
  return names[signal] ?? `signal ${signal}`;
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}
