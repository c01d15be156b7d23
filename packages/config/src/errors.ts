// Typed errors of @iop/config. Validation problems are data (ConfigIssue[] in a ConfigLoadResult), and a missing
// or unreadable file is an issue too; ConfigError is thrown only for caller mistakes at the API edge (an empty
// --config, a template option that is not a URL) so composition roots can map it to a usage error in one place.

import { errorGuard, typedError, type ErrorFault } from '@iop/errors';

export type ConfigErrorCode = 'invalid_argument';

/** Whose fault an error is: the caller's (bad input), transient (retry may help), or a bug. */
export type ConfigErrorKind = ErrorFault;

export class ConfigError extends typedError<ConfigErrorCode>('ConfigError') {
  readonly kind: ConfigErrorKind;

  constructor(
    code: ConfigErrorCode,
    message: string,
    options: { cause?: unknown; kind?: ConfigErrorKind } = {},
  ) {
    super(code, message, options);
    this.kind = options.kind ?? 'caller';
  }
}

export const isConfigError = errorGuard(ConfigError);
