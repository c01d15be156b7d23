// What a fake inference server does for the next requests: which models it serves, how many tokens it
// generates and how fast, what it replies, and which failure it injects. Shared by the Ollama and OpenAI fakes
// so a test can switch either one with the same `setBehavior(...)` call.

/** A failure the fake injects into matching requests. */
export type InjectedFailure = (
  | { kind: 'http'; status: number; message: string }
  | { kind: 'mid-stream'; afterTokens: number; message: string }
  | { kind: 'stall'; afterTokens: number }
  | { kind: 'drop'; afterTokens: number }
) & {
  /** How many requests fail before the server heals itself; unlimited when unset. */
  times?: number;
  /** Request paths the failure applies to (e.g. `['/api/chat']`); every path when unset. */
  paths?: string[];
};

export interface FakeToolCall {
  /** Upstream call id; the fake invents one when unset. */
  id?: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ReplyInput {
  model: string;
  /** Text of the last user message (or the generate prompt). */
  prompt: string;
  tokenCount: number;
}

export interface FakeBehavior {
  /** Served model names (Ollama: `name:tag`; OpenAI: the served model id). */
  models: string[];
  /** Text tokens in a default reply. */
  tokenCount: number;
  /** Delay before each token after the first one. */
  tokenDelayMs: number;
  /** Delay before the first token (time to first token). */
  firstTokenDelayMs: number;
  /** Reply text; split into tokens at word boundaries. Defaults to `defaultReply`. */
  reply: (input: ReplyInput) => string;
  /** Reasoning text streamed before the reply (Ollama: only when the request asks to `think`). */
  reasoning: string;
  /** Tool calls emitted after the reply text. */
  toolCalls: FakeToolCall[];
  failure?: InjectedFailure;
  /** Ollama `/api/pull`: names that exist in the registry; any name when unset. */
  pullable?: string[];
}

/** Deterministic reply: the prompt's words repeated until `tokenCount` words (`ok` for an empty prompt). */
export function defaultReply(input: ReplyInput): string {
  const words = input.prompt.split(/\s+/).filter((word) => word.length > 0);
  const source = words.length > 0 ? words : ['ok'];
  const out: string[] = [];
  for (let index = 0; index < input.tokenCount; index += 1) out.push(source[index % source.length] ?? 'ok');
  return out.join(' ');
}

export function defaultBehavior(models: string[]): FakeBehavior {
  return {
    models,
    tokenCount: 8,
    tokenDelayMs: 0,
    firstTokenDelayMs: 0,
    reply: defaultReply,
    reasoning: '',
    toolCalls: [],
  };
}

/** Splits text into word tokens that concatenate back to the text (leading whitespace stays with its word). */
export function splitTokens(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** Rough token count of a prompt, used for usage numbers (words, at least one). */
export function countPromptTokens(texts: string[]): number {
  return Math.max(
    1,
    texts.reduce((sum, text) => sum + splitTokens(text).length, 0),
  );
}

/** The planned output of one generation request. */
export interface Generation {
  reasoning: string[];
  content: string[];
  toolCalls: FakeToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  promptTokens: number;
  completionTokens: number;
}

export interface GenerationInput {
  model: string;
  prompt: string;
  promptTexts: string[];
  maxTokens?: number;
  withReasoning: boolean;
}

/** Plans reasoning, text and tool calls, capping reasoning + text at `maxTokens` like a real server. */
export function planGeneration(behavior: FakeBehavior, input: GenerationInput): Generation {
  let reasoning = input.withReasoning ? splitTokens(behavior.reasoning) : [];
  let content = splitTokens(
    behavior.reply({ model: input.model, prompt: input.prompt, tokenCount: behavior.tokenCount }),
  );
  let toolCalls = behavior.toolCalls;
  let finishReason: Generation['finishReason'] = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const cap = input.maxTokens;
  if (cap !== undefined && reasoning.length + content.length > cap) {
    reasoning = reasoning.slice(0, cap);
    content = content.slice(0, Math.max(0, cap - reasoning.length));
    toolCalls = [];
    finishReason = 'length';
  }
  return {
    reasoning,
    content,
    toolCalls,
    finishReason,
    promptTokens: countPromptTokens(input.promptTexts),
    completionTokens: reasoning.length + content.length + toolCalls.length,
  };
}

/** Vector size of a fake embedding when the request names no `dimensions`. */
export const FAKE_EMBEDDING_DIMENSIONS = 8;

/**
 * Deterministic embedding of `text`: `dimensions` multiples of 1/64 in [-0.5, 0.5), exact in float32, so a
 * test can compare what the client decoded (base64 float32 or JSON numbers) with `===`.
 */
export function fakeEmbedding(text: string, dimensions = FAKE_EMBEDDING_DIMENSIONS): number[] {
  let hash = 2166136261;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 16777619) >>> 0;
  }
  const values: number[] = [];
  for (let index = 0; index < dimensions; index += 1) {
    hash = Math.imul(hash ^ (hash >>> 15), 2246822519) >>> 0;
    values.push((hash % 64) / 64 - 0.5);
  }
  return values;
}

/** Fake token count of an embedding input: its whitespace-separated words (at least 1). */
export function fakeEmbeddingTokens(text: string): number {
  return Math.max(1, text.split(/\s+/).filter((word) => word.length > 0).length);
}
