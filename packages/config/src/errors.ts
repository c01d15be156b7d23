// Typed errors of @iop/config. Validation problems are data (ConfigIssue[] in a ConfigLoadResult), and a missing
// or unreadable file is an issue too; ConfigError is thrown only for caller mistakes at the API edge (an empty
// --config, a template option that is not a URL) so composition roots can map it to a usage error in one place.

export type ConfigErrorCode = 'invalid_argument';

/** Whose fault an error is: the caller's (bad input), transient (retry may help), or a bug. */
export type ConfigErrorKind = 'caller' | 'transient' | 'bug';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code: ConfigErrorCode;
  readonly kind: ConfigErrorKind;

  constructor(
    code: ConfigErrorCode,
    message: string,
    options: { cause?: unknown; kind?: ConfigErrorKind } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.kind = options.kind ?? 'caller';
  }
}

export function isConfigError(value: unknown): value is ConfigError {
  return value instanceof ConfigError;
}
