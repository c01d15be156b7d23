export {
  defaultBehavior,
  defaultReply,
  FAKE_EMBEDDING_DIMENSIONS,
  fakeEmbedding,
  fakeEmbeddingTokens,
  splitTokens,
  type FakeBehavior,
  type FakeToolCall,
  type InjectedFailure,
  type ReplyInput,
} from './fake-http/fake-behavior.js';
export type {
  FakeServer,
  FakeStartOptions,
  RecordedRequest,
  RequestOutcome,
} from './fake-http/fake-http-server.js';
export { FAKE_OLLAMA_VERSION, normalizeOllamaModel, startFakeOllama } from './fake-ollama/fake-ollama.js';
export {
  FAKE_MAX_MODEL_LEN,
  FAKE_VLLM_VERSION,
  startFakeOpenAI,
  vllmErrorBody,
} from './fake-openai/fake-openai.js';
export { startAgentModelServer } from './agent-model-server/agent-model-server.js';
export type {
  AgentModelRequest,
  AgentModelServer,
  AgentModelServerOptions,
} from './agent-model-server/agent-model-server.js';
export { decideAction } from './agent-model-server/conversation.js';
export type { ModelAction, ToolSpec, Turn } from './agent-model-server/conversation.js';
export {
  requireTool,
  RequiredToolMissingError,
  type RequiredToolOptions,
} from './system-tools/required-tool.js';
