// Suites that need a program from the system (nats-server, Chromium, openssl) ask here before they define their
// tests. On a developer's machine a missing tool skips the suite with one printed line; under CI=true it is an
// error that names the tool, so a run that could not install it fails instead of going green having tested nothing.

/** Thrown (under CI=true) when a suite's system tool is missing. */
export class RequiredToolMissingError extends Error {
  override readonly name = 'RequiredToolMissingError';
  readonly code = 'required_tool_missing';
  readonly fault = 'environment';

  constructor(
    readonly tool: string,
    readonly suite: string,
    readonly hint: string,
  ) {
    super(`${suite} needs ${tool}, which is missing (${hint}); under CI=true this fails instead of skipping`);
  }
}

export interface RequiredToolOptions {
  /** The environment to read CI from; default: process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Where the skip line goes; default: process.stdout. */
  write?: (line: string) => void;
}

/**
 * True when the suite can run. `present` false: under CI=true throws RequiredToolMissingError, otherwise prints
 * one line saying the suite is skipped and why, and returns false.
 */
export function requireTool(
  tool: string,
  present: boolean,
  suite: string,
  hint: string,
  options: RequiredToolOptions = {},
): boolean {
  if (present) return true;
  const env = options.env ?? process.env;
  if (env['CI'] === 'true') throw new RequiredToolMissingError(tool, suite, hint);
  const write = options.write ?? ((line: string) => process.stdout.write(line));
  write(`skipping ${suite}: ${tool} is missing (${hint})\n`);
  return false;
}
