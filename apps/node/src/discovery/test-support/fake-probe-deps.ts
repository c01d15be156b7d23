// ProbeDeps for tests: HTTP answers from a URL table (anything else is a refused connection, 'hang' never
// answers and ignores the signal), executables from a name table, `exec` answers from a path table, and every
// call is recorded so tests can assert what discovery touched.
import { fetchHttpClient } from '../../adapters/http/http-client.js';
import type { ExecResult, HostFacts, ProbeDeps } from '../probe-deps.js';

/** JSON to answer with, `'hang'`, or a raw `{ status, body }`. */
export type FakeHttpAnswer = unknown;

export interface FakeProbeDepsOptions {
  http?: Record<string, FakeHttpAnswer>;
  /** Executable name → path found on PATH. */
  executables?: Record<string, string>;
  /** `${path} ${args.join(' ')}` → result ('hang' = resolves only at the deadline, as execBounded does). */
  exec?: Record<string, Partial<ExecResult> | 'hang'>;
  env?: NodeJS.ProcessEnv;
  host?: Partial<HostFacts>;
}

export interface FakeProbeDeps extends ProbeDeps {
  readonly fetched: string[];
  readonly executed: string[];
}

export function fakeProbeDeps(options: FakeProbeDepsOptions = {}): FakeProbeDeps {
  const fetched: string[] = [];
  const executed: string[] = [];
  const fakeFetch = ((input: string | URL | Request) => {
    const url = String(input instanceof Request ? input.url : input);
    fetched.push(url);
    const answer = options.http?.[url];
    if (answer === undefined) {
      // As undici reports a refused connection: the socket error is the cause.
      const refused = Object.assign(new Error(`connect ECONNREFUSED ${new URL(url).host}`), {
        code: 'ECONNREFUSED',
      });
      return Promise.reject(new TypeError('fetch failed', { cause: refused }));
    }
    if (answer === 'hang') return new Promise<Response>(() => undefined);
    if (isRaw(answer)) return Promise.resolve(new Response(answer.body, { status: answer.status }));
    return Promise.resolve(
      new Response(JSON.stringify(answer), { status: 200, headers: { 'content-type': 'application/json' } }),
    );
  }) as typeof fetch;
  return {
    fetched,
    executed,
    http: fetchHttpClient(fakeFetch),
    which: (name) => options.executables?.[name],
    exec: (file, args, execOptions) => {
      const key = [file, ...args].join(' ');
      executed.push(key);
      const answer = options.exec?.[key];
      if (answer === 'hang') {
        return new Promise((resolve) => {
          const timer = setTimeout(
            () => resolve({ stdout: '', stderr: '', code: null, timedOut: true }),
            execOptions.timeoutMs,
          );
          timer.unref?.();
        });
      }
      return Promise.resolve({ stdout: '', stderr: '', code: answer ? 0 : 127, timedOut: false, ...answer });
    },
    env: options.env ?? { PATH: '/fake/bin' },
    host: () => ({
      platform: 'linux',
      arch: 'x64',
      cpuCores: 8,
      memoryBytes: 16 * 1024 ** 3,
      ...options.host,
    }),
  };
}

function isRaw(answer: unknown): answer is { status: number; body: string } {
  return (
    typeof answer === 'object' &&
    answer !== null &&
    typeof (answer as { status?: unknown }).status === 'number' &&
    typeof (answer as { body?: unknown }).body === 'string'
  );
}
