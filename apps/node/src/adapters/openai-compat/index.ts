export { createOpenAICompatAdapter, OPENAI_COMPAT_DEFAULT_BASE_URL } from './openai-compat-adapter.js';
export { toOpenAIChatRequest } from './openai-request.js';
