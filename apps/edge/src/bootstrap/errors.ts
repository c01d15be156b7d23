// Typed failures of the bootstrap module (artifact set, script rendering, host setup).
import { typedError, type FaultTable } from '@iop/errors';

export type BootstrapErrorCode =
  'invalid_value' | 'invalid_checksums' | 'mixed_versions' | 'artifact_missing' | 'setup_failed';

/** Bad input or a broken artifact folder is the operator's to fix; a failed setup step may be transient. */
const FAULT: FaultTable<BootstrapErrorCode> = {
  invalid_value: 'caller',
  invalid_checksums: 'caller',
  mixed_versions: 'caller',
  artifact_missing: 'caller',
  setup_failed: 'transient',
};

export class BootstrapError extends typedError('BootstrapError', FAULT) {}
