// A fake Ollama server speaking the native API byte-for-byte where clients care: `/api/chat` and
// `/api/generate` (NDJSON streams or one JSON body), thinking and tool calls, load/unload through an empty
// prompt and `keep_alive`, `/api/embed` (deterministic vectors, `dimensions`), `/api/tags`, `/api/ps`, `/api/version`, `/`, streamed `/api/pull` progress, and
// `{"error":"..."}` bodies. Checked against the official `ollama` npm client in fake-ollama.test.ts.
import {
  defaultBehavior,
  fakeEmbedding,
  fakeEmbeddingTokens,
  planGeneration,
  type FakeBehavior,
  type FakeToolCall,
  type Generation,
} from '../fake-http/fake-behavior.js';
import {
  playBlocking,
  playListing,
  playStream,
  startFakeHttpServer,
  type FakeExchange,
  type FakeServer,
  type FakeStartOptions,
} from '../fake-http/fake-http-server.js';
import { modelSize, randomId, sha256Hex } from '../fake-http/fake-ids.js';

export const FAKE_OLLAMA_VERSION = '0.12.6';
const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;
const NDJSON = 'application/x-ndjson';

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Ollama names without a tag mean `:latest`. */
export function normalizeOllamaModel(name: string): string {
  return name.includes(':') ? name : `${name}:latest`;
}

/** keep_alive as Ollama reads it: seconds as a number, or a Go duration string; negative keeps forever. */
function keepAliveMs(value: unknown): number {
  if (typeof value === 'number') return value < 0 ? Number.POSITIVE_INFINITY : value * 1000;
  if (typeof value === 'string') {
    const match = /^(-?\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
    if (match) {
      const amount = Number(match[1]);
      if (amount < 0) return Number.POSITIVE_INFINITY;
      const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's'] ?? 1000;
      return amount * unit;
    }
  }
  return DEFAULT_KEEP_ALIVE_MS;
}

function details(name: string): JsonObject {
  const family = name.split(/[:.\d]/)[0] || 'llama';
  return {
    parent_model: '',
    format: 'gguf',
    family,
    families: [family],
    parameter_size: '8.0B',
    quantization_level: 'Q4_K_M',
  };
}

function wantsThinking(think: unknown): boolean {
  return think === true || think === 'low' || think === 'medium' || think === 'high';
}

function toolCallsJson(calls: FakeToolCall[]): JsonObject[] {
  return calls.map((call, index) => ({
    id: call.id ?? randomId('call_', 8),
    function: { index, name: call.name, arguments: call.arguments },
  }));
}

function durations(generation: Generation): JsonObject {
  return {
    total_duration: 1_000_000 * (generation.completionTokens + 10),
    load_duration: 1_000_000,
    prompt_eval_count: generation.promptTokens,
    prompt_eval_duration: 100_000 * generation.promptTokens,
    eval_count: generation.completionTokens,
    eval_duration: 1_000_000 * generation.completionTokens,
  };
}

/** Starts a fake Ollama on 127.0.0.1. Default models: `llama3.2:latest`, `qwen3:8b`. */
export async function startFakeOllama(options: FakeStartOptions = {}): Promise<FakeServer> {
  const loaded = new Map<string, number>(); // model → expires at (ms since epoch)
  const defaults = defaultBehavior(['llama3.2:latest', 'qwen3:8b']);
  const serverRef: { current?: FakeServer } = {};

  const findModel = (behavior: FakeBehavior, name: string): string | undefined => {
    const wanted = normalizeOllamaModel(name);
    return behavior.models.find((model) => normalizeOllamaModel(model) === wanted);
  };
  const touch = (model: string, keepAlive: unknown): void => {
    const ms = keepAliveMs(keepAlive);
    if (ms === 0) loaded.delete(model);
    else loaded.set(model, ms === Number.POSITIVE_INFINITY ? Date.UTC(2318, 0, 1) : Date.now() + ms);
  };
  const now = (): string => new Date().toISOString();

  // Shared checks of /api/chat and /api/generate; answers the error and returns undefined when invalid.
  const resolveModel = (exchange: FakeExchange): { body: JsonObject; model: string } | undefined => {
    const body = exchange.record.body;
    if (!isObject(body)) {
      exchange.sendError(400, 'invalid request body');
      return undefined;
    }
    if (typeof body.model !== 'string' || body.model === '') {
      exchange.sendError(400, 'model is required');
      return undefined;
    }
    const model = findModel(exchange.behavior, body.model);
    if (!model) {
      exchange.sendError(404, `model '${body.model}' not found`);
      return undefined;
    }
    return { body, model };
  };

  const loadOrUnload = (
    exchange: FakeExchange,
    body: JsonObject,
    model: string,
    field: 'message' | 'response',
  ) => {
    const unload = keepAliveMs(body.keep_alive) === 0;
    touch(model, body.keep_alive);
    const payload = field === 'message' ? { message: { role: 'assistant', content: '' } } : { response: '' };
    const line = {
      model: body.model,
      created_at: now(),
      ...payload,
      done_reason: unload ? 'unload' : 'load',
      done: true,
    };
    if (body.stream === false) exchange.sendJson(200, line);
    else exchange.sendText(200, `${JSON.stringify(line)}\n`, NDJSON);
  };

  const generate = async (exchange: FakeExchange, field: 'message' | 'response'): Promise<void> => {
    const resolved = resolveModel(exchange);
    if (!resolved) return;
    const { body, model } = resolved;
    const options = isObject(body.options) ? body.options : {};
    const messages = Array.isArray(body.messages) ? body.messages.filter(isObject) : [];
    let prompt: string;
    let promptTexts: string[];
    if (field === 'message') {
      if (messages.length === 0) return loadOrUnload(exchange, body, model, field);
      const lastUser = [...messages].reverse().find((message) => message.role === 'user');
      prompt = typeof lastUser?.content === 'string' ? lastUser.content : '';
      promptTexts = messages.map((message) => (typeof message.content === 'string' ? message.content : ''));
    } else {
      prompt = typeof body.prompt === 'string' ? body.prompt : '';
      if (prompt === '' && !Array.isArray(body.images)) return loadOrUnload(exchange, body, model, field);
      promptTexts = [typeof body.system === 'string' ? body.system : '', prompt];
    }
    touch(model, body.keep_alive);
    const numPredict =
      typeof options.num_predict === 'number' && options.num_predict >= 0 ? options.num_predict : undefined;
    const generation = planGeneration(exchange.behavior, {
      model: String(body.model),
      prompt,
      promptTexts,
      maxTokens: numPredict,
      withReasoning: wantsThinking(body.think),
    });
    // Ollama reports tool calls with done_reason "stop"; only a num_predict cut says "length".
    const doneReason = generation.finishReason === 'length' ? 'length' : 'stop';
    const base = (): JsonObject => ({ model: body.model, created_at: now() });
    const piece = (content: string, extra: JsonObject = {}): JsonObject =>
      field === 'message'
        ? { ...base(), message: { role: 'assistant', content, ...extra }, done: false }
        : { ...base(), response: content, ...extra, done: false };
    const line = (value: unknown): string => `${JSON.stringify(value)}\n`;

    if (body.stream === false) {
      const text = generation.content.join('');
      const thinking = generation.reasoning.join('');
      const extra: JsonObject = {};
      if (thinking) extra.thinking = thinking;
      if (generation.toolCalls.length > 0 && field === 'message')
        extra.tool_calls = toolCallsJson(generation.toolCalls);
      const result =
        field === 'message'
          ? { ...base(), message: { role: 'assistant', content: text, ...extra }, done: true }
          : { ...base(), response: text, ...extra, done: true };
      const tokens = generation.reasoning.length + generation.content.length + generation.toolCalls.length;
      await playBlocking(exchange, tokens, () => ({
        ...result,
        done_reason: doneReason,
        ...durations(generation),
      }));
      return;
    }

    const tokens = [
      ...generation.reasoning.map((text) => line(piece('', { thinking: text }))),
      ...generation.content.map((text) => line(piece(text))),
    ];
    if (generation.toolCalls.length > 0 && field === 'message') {
      tokens.push(line(piece('', { tool_calls: toolCallsJson(generation.toolCalls) })));
    }
    const final =
      field === 'message'
        ? { ...base(), message: { role: 'assistant', content: '' }, done: true }
        : { ...base(), response: '', done: true };
    await playStream(exchange, {
      contentType: NDJSON,
      head: [],
      tokens,
      tail: [line({ ...final, done_reason: doneReason, ...durations(generation) })],
      errorChunks: (message) => [line({ error: message })],
    });
  };

  /** `/api/embed`: `input` is a string or a list; `dimensions` shortens the vectors. */
  const embed = (exchange: FakeExchange): void => {
    const resolved = resolveModel(exchange);
    if (!resolved) return;
    const { body } = resolved;
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(inputs) || !inputs.every((input) => typeof input === 'string'))
      return exchange.sendError(400, 'invalid input type');
    const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
    exchange.sendJson(200, {
      model: body.model,
      embeddings: inputs.map((input) => fakeEmbedding(input, dimensions)),
      total_duration: 1_000_000,
      load_duration: 100_000,
      prompt_eval_count: inputs.reduce((sum, input) => sum + fakeEmbeddingTokens(input), 0),
    });
  };

  const pull = async (exchange: FakeExchange): Promise<void> => {
    const body = exchange.record.body;
    if (!isObject(body)) return exchange.sendError(400, 'invalid request body');
    const requested = typeof body.model === 'string' && body.model ? body.model : body.name;
    if (typeof requested !== 'string' || requested === '')
      return exchange.sendError(400, 'model is required');
    const name = normalizeOllamaModel(requested);
    const { pullable } = exchange.behavior;
    const exists =
      pullable === undefined || pullable.some((candidate) => normalizeOllamaModel(candidate) === name);
    const missing = 'pull model manifest: file does not exist';
    const line = (value: unknown): string => `${JSON.stringify(value)}\n`;
    const steps: JsonObject[] = [];
    for (const layer of ['model', 'template', 'params']) {
      const digest = `sha256:${sha256Hex(`${name}/${layer}`)}`;
      const total = layer === 'model' ? modelSize(name) : 1024;
      const status = `pulling ${digest.slice(7, 19)}`;
      steps.push({ status, digest, total });
      for (const fraction of [0.5, 1])
        steps.push({ status, digest, total, completed: Math.round(total * fraction) });
    }
    steps.push({ status: 'verifying sha256 digest' }, { status: 'writing manifest' }, { status: 'success' });
    const addModel = (): void => {
      if (!exchange.behavior.models.some((model) => normalizeOllamaModel(model) === name)) {
        serverRef.current?.setBehavior({ models: [...exchange.behavior.models, name] });
      }
    };

    if (body.stream === false) {
      if (!exists) return exchange.sendError(500, missing);
      await playBlocking(exchange, steps.length, () => {
        addModel();
        return { status: 'success' };
      });
      return;
    }
    if (!exists) {
      exchange.sendText(200, line({ status: 'pulling manifest' }) + line({ error: missing }), NDJSON);
      return;
    }
    await playStream(exchange, {
      contentType: NDJSON,
      head: [line({ status: 'pulling manifest' })],
      tokens: steps.slice(0, -1).map(line),
      tail: [line(steps[steps.length - 1])],
      errorChunks: (message) => [line({ error: message })],
    });
    if (exchange.response.writableFinished) addModel();
  };

  const modelEntry = (name: string): JsonObject => ({
    name,
    model: name,
    modified_at: '2025-01-01T00:00:00Z',
    size: modelSize(name),
    digest: sha256Hex(name),
    details: details(name),
  });

  const route = async (exchange: FakeExchange): Promise<void> => {
    const { method, path } = exchange.record;
    const expect = (wanted: string): boolean => {
      if (method === wanted || (wanted === 'GET' && method === 'HEAD')) return true;
      exchange.sendText(405, '405 method not allowed');
      return false;
    };
    switch (path) {
      case '/':
        if (expect('GET')) exchange.sendText(200, 'Ollama is running');
        return;
      case '/api/version':
        if (expect('GET')) await playListing(exchange, () => ({ version: FAKE_OLLAMA_VERSION }));
        return;
      case '/api/tags':
        if (expect('GET'))
          await playListing(exchange, () => ({ models: exchange.behavior.models.map(modelEntry) }));
        return;
      case '/api/ps': {
        if (!expect('GET')) return;
        const nowMs = Date.now();
        const running = [...loaded.entries()]
          .filter(([, expires]) => expires > nowMs)
          .map(([name, expires]) => ({
            ...modelEntry(name),
            expires_at: new Date(expires).toISOString(),
            size_vram: modelSize(name),
            context_length: 4096,
          }));
        await playListing(exchange, () => ({ models: running }));
        return;
      }
      case '/api/chat':
        if (expect('POST')) await generate(exchange, 'message');
        return;
      case '/api/generate':
        if (expect('POST')) await generate(exchange, 'response');
        return;
      case '/api/embed':
        if (expect('POST')) embed(exchange);
        return;
      case '/api/pull':
        if (expect('POST')) await pull(exchange);
        return;
      default:
        exchange.sendText(404, '404 page not found');
    }
  };

  const server = await startFakeHttpServer(
    {
      errorBody: (_status, message) => ({ error: message }),
      route,
      onBehaviorChange: (behavior) => {
        for (const name of loaded.keys()) if (!behavior.models.includes(name)) loaded.delete(name);
      },
    },
    defaults,
    options,
  );
  serverRef.current = server;
  return server;
}
