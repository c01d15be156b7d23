export { createOllamaAdapter, OLLAMA_DEFAULT_BASE_URL } from './ollama-adapter.js';
export { toOllamaChatRequest } from './ollama-request.js';
export type { OllamaChatRequest, OllamaMessage } from './ollama-request.js';
