// Text forms of a loaded config for `iop-edge config print`: YAML (the file's own shape, normalized) or JSON,
// always redacted so printing a config never discloses a secret.
import { stringify } from 'yaml';
import { redactConfig } from './redact-config.js';
import type { EdgeConfig } from './types.js';

export type ConfigRenderFormat = 'yaml' | 'json';

export function renderConfig(config: EdgeConfig, format: ConfigRenderFormat): string {
  const redacted = redactConfig(config);
  return format === 'json' ? `${JSON.stringify(redacted, null, 2)}\n` : stringify(redacted, { lineWidth: 0 });
}
