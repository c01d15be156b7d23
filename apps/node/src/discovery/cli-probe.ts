// Coding-agent CLIs on the node user's PATH. For each known name found, `<path> --version` runs once, without a
// shell, under a short deadline; nothing else is ever executed. A CLI that does not answer in time is still
// listed (it exists), with an empty version.
import type { DiscoveredCli } from '@iop/wire';
import type { ProbeDeps } from './probe-deps.js';

/** The CLIs IOP has profiles for (configs/edge.yaml). */
export const KNOWN_CLIS: readonly string[] = ['claude', 'codex', 'opencode', 'cline', 'agy'];

export async function probeClis(
  deps: Pick<ProbeDeps, 'exec' | 'which' | 'env'>,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<DiscoveredCli[]> {
  const found = KNOWN_CLIS.flatMap((name) => {
    const path = deps.which(name, deps.env['PATH']);
    return path ? [{ name, path }] : [];
  });
  return Promise.all(
    found.map(async ({ name, path }) => {
      const result = await deps.exec(path, ['--version'], {
        timeoutMs: options.timeoutMs,
        env: deps.env,
        signal: options.signal,
      });
      const version = result.code === 0 ? firstLine(result.stdout) || firstLine(result.stderr) : '';
      return { name, path, version };
    }),
  );
}

function firstLine(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .find((line) => line.length > 0)
      ?.slice(0, 200) ?? ''
  );
}
