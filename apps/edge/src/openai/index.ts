export {
  closeOpenAIApp,
  createOpenAIApp,
  MAX_BODY_BYTES,
  type OpenAIApp,
  type OpenAIAppOptions,
} from './openai-app.js';
export {
  createOpenAISurface,
  type OpenAISurface,
  type OpenAISurfaceDeps,
  type OpenAISurfaceOptions,
} from './openai-surface.js';
export { mapOpenAIError, OpenAIHttpError } from './openai-error.js';
export { UNSUPPORTED_METADATA_KEYS, UNSUPPORTED_TOP_LEVEL_FIELDS } from './request-validator.js';
export { parseListenAddress } from '../net/listen-address.js';
