// Where the node's registration token comes from: `--token-file` or env IOP_NODE_TOKEN, never the command line
// (argv is visible to every user through ps).
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from './command.js';

export const TOKEN_ENV = 'IOP_NODE_TOKEN';

export interface TokenSource {
  token: string;
  /** `file <path>` or `env IOP_NODE_TOKEN` (for logs; never the token). */
  origin: string;
  /** Set when the token file is readable by group or others. */
  warning?: string;
}

/** Refuses `--token` / `--token=...` anywhere in argv with an explanation. */
export function refuseTokenFlag(argv: readonly string[]): void {
  if (argv.some((arg) => arg === '--token' || arg.startsWith('--token='))) {
    throw new UsageError(
      `--token is refused: a token on the command line is visible to other users; use --token-file FILE or ${TOKEN_ENV}`,
    );
  }
}

export function readToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv, cwd: string): TokenSource {
  if (tokenFile) {
    const file = path.resolve(cwd, tokenFile);
    let text: string;
    let mode: number;
    try {
      text = fs.readFileSync(file, 'utf8');
      mode = fs.statSync(file).mode;
    } catch (error) {
      throw new UsageError(`cannot read --token-file ${file}: ${(error as Error).message}`);
    }
    const token = text.trim();
    if (!token) throw new UsageError(`--token-file ${file} is empty`);
    if (/\s/.test(token)) throw new UsageError(`--token-file ${file} must hold a single token`);
    const warning =
      process.platform !== 'win32' && (mode & 0o077) !== 0
        ? `token file ${file} is readable by other users (chmod 600 it)`
        : undefined;
    return { token, origin: `file ${file}`, warning };
  }
  const token = env[TOKEN_ENV]?.trim();
  if (token) return { token, origin: `env ${TOKEN_ENV}` };
  throw new UsageError(`no token: pass --token-file FILE or set ${TOKEN_ENV}`);
}
