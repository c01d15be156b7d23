// Public API of @iop/logging: the Logger interface, its pino factory with secret redaction, and silentLogger.
export { silentLogger, type Logger } from './logger.js';
export { createLogger, REDACTED_KEYS, type LoggingOptions } from './create-logger.js';
