export { UpstreamCancelled, UpstreamError, abortReason } from './upstream-error.js';
export type { UpstreamErrorCode } from './upstream-error.js';
export { HttpSettingsError, DEFAULT_REQUEST_TIMEOUT_MS, HEALTH_PROBE_TIMEOUT_MS } from './http-settings.js';
export { readSse } from './sse-reader.js';
export type { SseEvent } from './sse-reader.js';
export { readNdjson } from './ndjson-reader.js';
export { readLines } from './line-reader.js';
