// Public API of @iop/config: load, validate, normalize and classify edge.yaml refreshes.
export * from './types.js';
export { ConfigError, isConfigError, type ConfigErrorCode, type ConfigErrorKind } from './errors.js';
export { parseConfigText, loadConfigFile, type ParseConfigOptions } from './load-config.js';
export { formatIssue } from './format-issue.js';
export { resolveConfigPath, CONFIG_ENV_VAR } from './resolve-config-path.js';
export { resolveAdapterReference, type AdapterResolution } from './resolve-adapter.js';
export { LIMITS, DEFAULTS, type Limit } from './limits.js';
export { classifyRefresh } from './classify-refresh.js';
export { renderConfigTemplate } from './config-template.js';
export { redactConfig, REDACTED } from './redact-config.js';
export { isHttpUrl } from './validate-structure.js';
export { createAjv, type AjvOptions } from './create-ajv.js';
export {
  parseListenAddress,
  isListenAddress,
  isLoopbackHost,
  isLoopbackListen,
  type ListenAddress,
} from './listen-address.js';
export { parseHostAuthority, isHostAuthority, type HostAuthority } from './host-authority.js';
export { securityWarnings } from './check-exposure.js';
export { capacityWarnings } from './capacity-warnings.js';
export { renderConfig, type ConfigRenderFormat } from './render-config.js';
export { appendApiKey, type ApiKeyEntry } from './append-api-key.js';
export {
  appendNodeEntries,
  renderNodeEntries,
  type CommentedEntry,
  type NodeEntries,
} from './append-node-entries.js';
export { IDENTIFIER_PATTERN } from './schema.js';
export { isPublicAddress, allowListCheck, type AddressCheck } from './public-address.js';
