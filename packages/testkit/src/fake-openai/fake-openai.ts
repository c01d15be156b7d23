// A fake OpenAI-compatible server in vLLM's flavour: `/v1/models` (owned_by "vllm", root, max_model_len),
// `/v1/chat/completions` as JSON or SSE (reasoning_content deltas, tool-call deltas split across chunks,
// stream_options.include_usage), `/v1/completions` (legacy text completion of `prompt`, JSON or SSE
// `text_completion` chunks), `/v1/embeddings` (float or base64, `dimensions`), `/v1/responses` as JSON or the SSE event sequence the SDK's ResponseStream
// accepts, `/health`, `/version`, and vLLM error bodies `{"error":{"message","type","param","code":<int>}}`.
// Checked against the official `openai` npm client in fake-openai.test.ts.
import {
  defaultBehavior,
  fakeEmbedding,
  fakeEmbeddingTokens,
  planGeneration,
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
import { randomId } from '../fake-http/fake-ids.js';

export const FAKE_VLLM_VERSION = '0.11.0';
export const FAKE_MAX_MODEL_LEN = 32768;
const SSE = 'text/event-stream; charset=utf-8';

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ERROR_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  403: 'PermissionDeniedError',
  404: 'NotFoundError',
  409: 'ConflictError',
  422: 'UnprocessableEntityError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
};

/** vLLM's error body: the HTTP status repeated as an integer `code`. */
export function vllmErrorBody(status: number, message: string): JsonObject {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestError');
  return { error: { message, type, param: null, code: status } };
}

/** Text of a message `content` that is a string or an array of text parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isObject)
    .map((part) => (typeof part.text === 'string' ? part.text : ''))
    .join(' ');
}

/** Splits tool-call arguments into three pieces so clients must reassemble them. */
function argumentPieces(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces.length > 0 ? pieces : [''];
}

interface PlannedCall {
  id: string;
  name: string;
  arguments: string;
}

function planCalls(calls: FakeToolCall[], prefix: string): PlannedCall[] {
  return calls.map((call) => ({
    id: call.id ?? randomId(prefix, 16),
    name: call.name,
    arguments: JSON.stringify(call.arguments),
  }));
}

/** Starts a fake vLLM server on 127.0.0.1. Default model: `meta-llama/Llama-3.1-8B-Instruct`. */
export async function startFakeOpenAI(options: FakeStartOptions = {}): Promise<FakeServer> {
  const defaults = defaultBehavior(['meta-llama/Llama-3.1-8B-Instruct']);
  const created = Math.floor(Date.now() / 1000);

  // Resolves the request's model (vLLM falls back to the first served model when unset).
  const resolveModel = (exchange: FakeExchange): { body: JsonObject; model: string } | undefined => {
    const body = exchange.record.body;
    if (!isObject(body)) {
      exchange.sendError(400, 'Expecting value: request body must be a JSON object');
      return undefined;
    }
    const models = exchange.behavior.models;
    const model = typeof body.model === 'string' && body.model !== '' ? body.model : models[0];
    if (model === undefined || !models.includes(model)) {
      exchange.sendError(404, `The model \`${String(model)}\` does not exist.`);
      return undefined;
    }
    return { body, model };
  };

  /** `/v1/embeddings`: `input` a string or a list of strings; float lists or base64 float32 (little-endian). */
  const embeddings = (exchange: FakeExchange): void => {
    const resolved = resolveModel(exchange);
    if (!resolved) return;
    const { body, model } = resolved;
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((input) => typeof input === 'string'))
      return exchange.sendError(400, 'input must be a string or a non-empty list of strings');
    const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
    const base64 = body.encoding_format === 'base64';
    const tokens = inputs.reduce((sum, input) => sum + fakeEmbeddingTokens(input), 0);
    exchange.sendJson(200, {
      id: randomId('embd-', 32),
      object: 'list',
      created: Math.floor(Date.now() / 1000),
      model,
      data: inputs.map((input, index) => {
        const vector = fakeEmbedding(input, dimensions);
        return {
          index,
          object: 'embedding',
          embedding: base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector,
        };
      }),
      usage: {
        prompt_tokens: tokens,
        total_tokens: tokens,
        completion_tokens: 0,
        prompt_tokens_details: null,
      },
    });
  };

  const usageOf = (generation: Generation): JsonObject => ({
    prompt_tokens: generation.promptTokens,
    total_tokens: generation.promptTokens + generation.completionTokens,
    completion_tokens: generation.completionTokens,
    prompt_tokens_details: null,
  });

  const chatCompletions = async (exchange: FakeExchange): Promise<void> => {
    const resolved = resolveModel(exchange);
    if (!resolved) return;
    const { body, model } = resolved;
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return exchange.sendError(400, "'messages' is a required property");
    }
    const messages = body.messages.filter(isObject);
    const lastUser = [...messages].reverse().find((message) => message.role === 'user');
    const kwargs = isObject(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
    const maxTokens = [body.max_completion_tokens, body.max_tokens].find(
      (value): value is number => typeof value === 'number',
    );
    const generation = planGeneration(exchange.behavior, {
      model,
      prompt: contentText(lastUser?.content),
      promptTexts: messages.map((message) => contentText(message.content)),
      maxTokens,
      withReasoning: kwargs.enable_thinking !== false,
    });
    const calls = planCalls(generation.toolCalls, 'chatcmpl-tool-');
    const id = randomId('chatcmpl-', 32);
    const createdAt = Math.floor(Date.now() / 1000);

    if (body.stream !== true) {
      const text = generation.content.join('');
      const reasoning = generation.reasoning.join('');
      const message: JsonObject = {
        role: 'assistant',
        content: calls.length > 0 && text === '' ? null : text,
        refusal: null,
        annotations: null,
        audio: null,
        function_call: null,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
        reasoning_content: reasoning === '' ? null : reasoning,
      };
      const tokens = generation.reasoning.length + generation.content.length + calls.length;
      await playBlocking(exchange, tokens, () => ({
        id,
        object: 'chat.completion',
        created: createdAt,
        model,
        choices: [
          { index: 0, message, logprobs: null, finish_reason: generation.finishReason, stop_reason: null },
        ],
        service_tier: null,
        system_fingerprint: null,
        usage: usageOf(generation),
        prompt_logprobs: null,
        kv_transfer_params: null,
      }));
      return;
    }

    const streamOptions = isObject(body.stream_options) ? body.stream_options : {};
    const includeUsage = streamOptions.include_usage === true;
    const event = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
    const chunk = (delta: JsonObject, finishReason: string | null = null): string =>
      event({
        id,
        object: 'chat.completion.chunk',
        created: createdAt,
        model,
        choices: [
          {
            index: 0,
            delta,
            logprobs: null,
            finish_reason: finishReason,
            ...(finishReason === null ? {} : { stop_reason: null }),
          },
        ],
        ...(includeUsage ? { usage: null } : {}),
      });
    const tokens = [
      ...generation.reasoning.map((text) => chunk({ reasoning_content: text })),
      ...generation.content.map((text) => chunk({ content: text })),
    ];
    calls.forEach((call, index) => {
      tokens.push(
        chunk({
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        }),
      );
      for (const piece of argumentPieces(call.arguments)) {
        tokens.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    const tail = [chunk({}, generation.finishReason)];
    if (includeUsage) {
      tail.push(
        event({
          id,
          object: 'chat.completion.chunk',
          created: createdAt,
          model,
          choices: [],
          usage: usageOf(generation),
        }),
      );
    }
    tail.push('data: [DONE]\n\n');
    await playStream(exchange, {
      contentType: SSE,
      head: [chunk({ role: 'assistant', content: '' })],
      tokens,
      tail,
      errorChunks: (message) => [event(vllmErrorBody(500, message)), 'data: [DONE]\n\n'],
    });
  };

  /** `/v1/completions`: one string prompt (or a list of one), JSON or SSE `text_completion` chunks. */
  const textCompletions = async (exchange: FakeExchange): Promise<void> => {
    const resolved = resolveModel(exchange);
    if (!resolved) return;
    const { body, model } = resolved;
    const prompt =
      typeof body.prompt === 'string'
        ? body.prompt
        : Array.isArray(body.prompt) && body.prompt.length === 1 && typeof body.prompt[0] === 'string'
          ? body.prompt[0]
          : undefined;
    if (prompt === undefined)
      return exchange.sendError(400, "'prompt' must be a string or a list of one string");
    const generation = planGeneration(exchange.behavior, {
      model,
      prompt,
      promptTexts: [prompt],
      maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
      withReasoning: false,
    });
    const id = randomId('cmpl-', 32);
    const createdAt = Math.floor(Date.now() / 1000);
    const choice = (text: string, finishReason: string | null): JsonObject => ({
      index: 0,
      text,
      logprobs: null,
      finish_reason: finishReason,
      stop_reason: null,
    });
    if (body.stream !== true) {
      await playBlocking(exchange, generation.content.length, () => ({
        id,
        object: 'text_completion',
        created: createdAt,
        model,
        choices: [choice(generation.content.join(''), generation.finishReason)],
        usage: usageOf(generation),
      }));
      return;
    }
    const includeUsage = isObject(body.stream_options) && body.stream_options.include_usage === true;
    const event = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
    const chunk = (text: string, finishReason: string | null = null): string =>
      event({
        id,
        object: 'text_completion',
        created: createdAt,
        model,
        choices: [choice(text, finishReason)],
        ...(includeUsage ? { usage: null } : {}),
      });
    const tail = [chunk('', generation.finishReason)];
    if (includeUsage) {
      tail.push(
        event({
          id,
          object: 'text_completion',
          created: createdAt,
          model,
          choices: [],
          usage: usageOf(generation),
        }),
      );
    }
    tail.push('data: [DONE]\n\n');
    await playStream(exchange, {
      contentType: SSE,
      head: [],
      tokens: generation.content.map((text) => chunk(text)),
      tail,
      errorChunks: (message) => [event(vllmErrorBody(500, message)), 'data: [DONE]\n\n'],
    });
  };

  const responses = async (exchange: FakeExchange): Promise<void> => {
    const resolved = resolveModel(exchange);
    if (!resolved) return;
    const { body, model } = resolved;
    const items = Array.isArray(body.input) ? body.input.filter(isObject) : [];
    const lastUser = [...items].reverse().find((item) => item.role === 'user');
    const prompt = typeof body.input === 'string' ? body.input : contentText(lastUser?.content);
    const instructions = typeof body.instructions === 'string' ? body.instructions : null;
    const maxOutput = typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined;
    const generation = planGeneration(exchange.behavior, {
      model,
      prompt,
      promptTexts: [instructions ?? '', prompt, ...items.map((item) => contentText(item.content))],
      maxTokens: maxOutput,
      withReasoning: true,
    });
    const calls = planCalls(generation.toolCalls, 'call_');
    const responseId = randomId('resp_', 32);
    const reasoningId = randomId('rs_', 32);
    const messageId = randomId('msg_', 32);
    const callItemIds = calls.map(() => randomId('fc_', 32));
    const text = generation.content.join('');
    const reasoningText = generation.reasoning.join('');
    const incomplete = generation.finishReason === 'length';

    const reasoningItem = (done: boolean): JsonObject => ({
      id: reasoningId,
      type: 'reasoning',
      summary: [],
      content: done ? [{ type: 'reasoning_text', text: reasoningText }] : [],
    });
    const messageItem = (done: boolean): JsonObject => ({
      id: messageId,
      type: 'message',
      status: done ? 'completed' : 'in_progress',
      role: 'assistant',
      content: done ? [{ type: 'output_text', text, annotations: [], logprobs: [] }] : [],
    });
    const callItem = (index: number, done: boolean): JsonObject => {
      const call = calls[index];
      return {
        id: callItemIds[index],
        type: 'function_call',
        status: done ? 'completed' : 'in_progress',
        call_id: call.id,
        name: call.name,
        arguments: done ? call.arguments : '',
      };
    };
    const withMessage = text !== '' || calls.length === 0;
    const output = (): JsonObject[] => [
      ...(reasoningText ? [reasoningItem(true)] : []),
      ...(withMessage ? [messageItem(true)] : []),
      ...calls.map((_call, index) => callItem(index, true)),
    ];
    const usage = {
      input_tokens: generation.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: generation.completionTokens,
      output_tokens_details: { reasoning_tokens: generation.reasoning.length },
      total_tokens: generation.promptTokens + generation.completionTokens,
    };
    const createdAt = Math.floor(Date.now() / 1000);
    const responseObject = (status: string, done: boolean, error: unknown = null): JsonObject => ({
      id: responseId,
      object: 'response',
      created_at: createdAt,
      status,
      background: false,
      error,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions,
      max_output_tokens: maxOutput ?? null,
      model,
      output: done ? output() : [],
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      store: false,
      temperature: typeof body.temperature === 'number' ? body.temperature : 1,
      text: { format: { type: 'text' } },
      tool_choice: body.tool_choice ?? 'auto',
      tools: Array.isArray(body.tools) ? body.tools : [],
      top_p: typeof body.top_p === 'number' ? body.top_p : 1,
      truncation: 'disabled',
      usage: done ? usage : null,
      metadata: isObject(body.metadata) ? body.metadata : {},
    });
    const finalStatus = incomplete ? 'incomplete' : 'completed';

    if (body.stream !== true) {
      const tokens = generation.reasoning.length + generation.content.length + calls.length;
      await playBlocking(exchange, tokens, () => responseObject(finalStatus, true));
      return;
    }

    // Sequence numbers are assigned when a chunk is built. The plan is built up front in write order, so they
    // increase along the stream; a failure's event is built last and keeps increasing (with a gap).
    let sequence = 0;
    const event = (type: string, fields: JsonObject): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`;
    const head = [
      event('response.created', { response: responseObject('in_progress', false) }),
      event('response.in_progress', { response: responseObject('in_progress', false) }),
    ];
    const tokens: string[] = [];
    let outputIndex = 0;
    if (reasoningText) {
      const index = outputIndex++;
      const part = { item_id: reasoningId, output_index: index, content_index: 0 };
      head.push(event('response.output_item.added', { output_index: index, item: reasoningItem(false) }));
      head.push(
        event('response.content_part.added', { ...part, part: { type: 'reasoning_text', text: '' } }),
      );
      for (const delta of generation.reasoning)
        tokens.push(event('response.reasoning_text.delta', { ...part, delta }));
      tokens.push(event('response.reasoning_text.done', { ...part, text: reasoningText }));
      tokens.push(
        event('response.content_part.done', {
          ...part,
          part: { type: 'reasoning_text', text: reasoningText },
        }),
      );
      tokens.push(event('response.output_item.done', { output_index: index, item: reasoningItem(true) }));
    }
    if (withMessage) {
      const index = outputIndex++;
      const part = { item_id: messageId, output_index: index, content_index: 0 };
      const added = [
        event('response.output_item.added', { output_index: index, item: messageItem(false) }),
        event('response.content_part.added', {
          ...part,
          part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
        }),
      ];
      if (tokens.length === 0) head.push(...added);
      else tokens.push(...added);
      for (const delta of generation.content) {
        tokens.push(event('response.output_text.delta', { ...part, delta, logprobs: [] }));
      }
      tokens.push(event('response.output_text.done', { ...part, text, logprobs: [] }));
      tokens.push(
        event('response.content_part.done', {
          ...part,
          part: { type: 'output_text', text, annotations: [], logprobs: [] },
        }),
      );
      tokens.push(event('response.output_item.done', { output_index: index, item: messageItem(true) }));
    }
    calls.forEach((call, callIndex) => {
      const index = outputIndex++;
      const itemId = callItemIds[callIndex];
      tokens.push(
        event('response.output_item.added', { output_index: index, item: callItem(callIndex, false) }),
      );
      for (const delta of argumentPieces(call.arguments)) {
        tokens.push(
          event('response.function_call_arguments.delta', { item_id: itemId, output_index: index, delta }),
        );
      }
      tokens.push(
        event('response.function_call_arguments.done', {
          item_id: itemId,
          output_index: index,
          arguments: call.arguments,
        }),
      );
      tokens.push(
        event('response.output_item.done', { output_index: index, item: callItem(callIndex, true) }),
      );
    });
    const tail = [event(`response.${finalStatus}`, { response: responseObject(finalStatus, true) })];
    await playStream(exchange, {
      contentType: SSE,
      head,
      tokens,
      tail,
      errorChunks: (message) => [
        event('response.failed', {
          response: responseObject('failed', false, { code: 'server_error', message }),
        }),
      ],
    });
  };

  const route = async (exchange: FakeExchange): Promise<void> => {
    const { method, path } = exchange.record;
    const expect = (wanted: string): boolean => {
      if (method === wanted) return true;
      exchange.sendJson(405, { detail: 'Method Not Allowed' });
      return false;
    };
    switch (path) {
      case '/health':
        if (expect('GET')) exchange.sendText(200, '', 'application/json');
        return;
      case '/version':
        if (expect('GET')) exchange.sendJson(200, { version: FAKE_VLLM_VERSION });
        return;
      case '/v1/models':
        if (!expect('GET')) return;
        await playListing(exchange, () => ({
          object: 'list',
          data: exchange.behavior.models.map((name) => ({
            id: name,
            object: 'model',
            created,
            owned_by: 'vllm',
            root: name,
            parent: null,
            max_model_len: FAKE_MAX_MODEL_LEN,
            permission: [
              {
                id: `modelperm-${name.replace(/[^a-zA-Z0-9]/g, '')}`,
                object: 'model_permission',
                created,
                allow_create_engine: false,
                allow_sampling: true,
                allow_logprobs: true,
                allow_search_indices: false,
                allow_view: true,
                allow_fine_tuning: false,
                organization: '*',
                group: null,
                is_blocking: false,
              },
            ],
          })),
        }));
        return;
      case '/v1/chat/completions':
        if (expect('POST')) await chatCompletions(exchange);
        return;
      case '/v1/responses':
        if (expect('POST')) await responses(exchange);
        return;
      case '/v1/completions':
        if (expect('POST')) await textCompletions(exchange);
        return;
      case '/v1/embeddings':
        if (expect('POST')) embeddings(exchange);
        return;
      default:
        exchange.sendJson(404, { detail: 'Not Found' });
    }
  };

  return startFakeHttpServer({ errorBody: vllmErrorBody, route }, defaults, options);
}
