// Typed failures of the bootstrap module (artifact set, script rendering, host setup).
export type BootstrapErrorCode =
  'invalid_value' | 'invalid_checksums' | 'mixed_versions' | 'artifact_missing' | 'setup_failed';

export class BootstrapError extends Error {
  override readonly name = 'BootstrapError';
  readonly code: BootstrapErrorCode;
  /** Bad input or a broken artifact folder is the operator's to fix; a failed setup step may be transient. */
  readonly fault: 'caller' | 'transient';

  constructor(code: BootstrapErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.fault = code === 'setup_failed' ? 'transient' : 'caller';
  }
}
