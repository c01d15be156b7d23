// Public API of @iop/config: load, validate, normalize and classify edge.yaml refreshes.
export * from './types.js';
export { ConfigError, isConfigError, type ConfigErrorCode, type ConfigErrorKind } from './errors.js';
export { formatIssue } from './format-issue.js';
export { resolveConfigPath } from './resolve-config-path.js';
