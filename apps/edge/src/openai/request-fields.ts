// No silent drop: decides, for every top-level field of an OpenAI request body, what happens to it on each backend
// a run of the requested model may reach (the adapter types of its providers: ollama, openai_compat, cli).
// A field is
//   - mapped: IOP reads it and the node writes it in the backend's own form (`response_format` → Ollama `format`),
//     or the edge itself consumes it (`stream`, `metadata`);
//   - forwarded: copied verbatim into the OpenAI-compatible backend's body (RunRequest.extra_body_json) — the
//     OpenAI fields IOP has no typed form for (`logit_bias`, `user`, ...) and every field IOP does not know at all
//     (vLLM's `top_k`, `guided_json`, ...);
//   - refused: 400 `unsupported_parameter` naming the field and the backend, unless the model sets
//     `drop_unsupported: true`, which drops it and names it in the `x-iop-dropped-params` response header.
// A value that asks for nothing (`n: 1`, `logprobs: false`, `parallel_tool_calls: true`, null) is accepted by
// every backend. A model served by several adapter types takes a field only when all of them can; forwarded
// fields are sent only when every backend is OpenAI-compatible. The table is documented field by field in
// agent-contract/outer/openai-compatible-api.md; keep the two in step.
import type { AdapterType } from '@iop/config';
import { OpenAIHttpError } from './openai-error.js';

/** What happens to one field on one backend. */
export type FieldVerdict = 'mapped' | 'forwarded' | 'refused';

/**
 * A fixed verdict, or one that depends on the value (a no-op value is accepted where the field is not) and, for
 * the few fields whose meaning depends on another one, on the whole body.
 */
type Rule = FieldVerdict | ((value: unknown, body: Record<string, unknown>) => FieldVerdict);

interface FieldRule {
  ollama: Rule;
  openai_compat: Rule;
  cli: Rule;
  /** Why a backend refuses it (completes the error message). */
  why?: string;
}

export type RequestEndpoint = 'chat' | 'responses' | 'embeddings' | 'completions';

export interface FieldPlan {
  /** Fields removed from the body because the model drops what it cannot take (`x-iop-dropped-params`). */
  dropped: string[];
  /** Fields for RunRequest.extra_body_json; undefined when there are none. */
  extraBody: Record<string, unknown> | undefined;
}

const MAPPED: FieldRule = { ollama: 'mapped', openai_compat: 'mapped', cli: 'mapped' };
/** Generation controls: both HTTP backends take them; a coding-agent CLI has no such knob. */
const SAMPLING: FieldRule = {
  ollama: 'mapped',
  openai_compat: 'mapped',
  cli: 'refused',
  why: 'a CLI agent takes no sampling parameters',
};

/** Accepted (as mapped) when `accept(value)`, refused otherwise. */
const when =
  (accept: (value: unknown, body: Record<string, unknown>) => boolean): Rule =>
  (value, body) =>
    accept(value, body) ? 'mapped' : 'refused';
/** Forwarded when the value asks for something, accepted without effect when it does not. */
const forwardUnless =
  (noop: (value: unknown) => boolean): Rule =>
  (value) =>
    noop(value) ? 'mapped' : 'forwarded';

const isTrue = (value: unknown) => value === true;
const isFalse = (value: unknown) => value === false;
const isEmptyArray = (value: unknown) => Array.isArray(value) && value.length === 0;
const isEmptyObject = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
const isOneOf =
  (...allowed: unknown[]) =>
  (value: unknown) =>
    allowed.includes(value);
const formatType = (value: unknown): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)['type'] : undefined;
const isTextFormat = (value: unknown) => formatType(value) === 'text';
const isKnownFormat = (value: unknown) => isOneOf('text', 'json_object', 'json_schema')(formatType(value));
const isAutoOrNone = isOneOf('auto', 'none');
/** Ollama's `think` takes these reasoning levels (or none, which turns thinking off). */
const ollamaEffort = isOneOf('low', 'medium', 'high', 'none');

const LOGPROBS_WHY = 'IOP does not return token log-probabilities';

/**
 * Responses `include`: each value asks for something extra in the answer. IOP adds nothing, so a value is taken
 * only when the answer holds nothing it applies to. `reasoning.encrypted_content` asks for an encrypted copy of
 * each reasoning item: the answer has a reasoning item only with IOP's `include_reasoning: true` (else reasoning
 * is inlined or dropped, never an item), so without it the answer, having no reasoning item, is complete (codex
 * sends this value on every request). Every other value (`file_search_call.results`,
 * `message.output_text.logprobs`, ...) asks for content IOP would silently leave out.
 */
const isAnswerableInclude = (value: unknown, body: Record<string, unknown>): boolean =>
  Array.isArray(value) &&
  value.every((entry) => entry === 'reasoning.encrypted_content' && body['include_reasoning'] !== true);

/** Fields both endpoints share. */
const COMMON: Record<string, FieldRule> = {
  model: MAPPED,
  stream: MAPPED,
  metadata: MAPPED,
  // IOP's own reasoning switches: inputs of the model's generation policy and of the answer's shape.
  think: MAPPED,
  include_reasoning: MAPPED,
  thinking_token_budget: MAPPED,
  temperature: SAMPLING,
  top_p: SAMPLING,
  seed: SAMPLING,
  presence_penalty: SAMPLING,
  frequency_penalty: SAMPLING,
  reasoning_effort: {
    ollama: when(ollamaEffort),
    openai_compat: 'mapped',
    cli: 'refused',
    why: "its think switch takes only 'low', 'medium', 'high' or 'none' (a CLI agent takes no reasoning effort)",
  },
  tools: {
    ollama: 'mapped',
    openai_compat: 'mapped',
    cli: when(isEmptyArray),
    why: 'a CLI agent uses its own tools',
  },
  tool_choice: {
    ollama: when(isAutoOrNone),
    openai_compat: 'mapped',
    cli: when(isAutoOrNone),
    why: "it has no tool_choice (only 'auto' and 'none' are honoured)",
  },
  parallel_tool_calls: {
    ollama: when(isTrue),
    openai_compat: forwardUnless(isTrue),
    cli: when(isTrue),
    why: 'it cannot restrict tool calls to one per turn',
  },
  user: { ollama: 'refused', openai_compat: 'forwarded', cli: 'refused', why: 'it has no end-user field' },
  safety_identifier: {
    ollama: 'refused',
    openai_compat: 'forwarded',
    cli: 'refused',
    why: 'it has no end-user field',
  },
  // A routing hint for the backend's prompt cache: it never changes the answer.
  prompt_cache_key: { ollama: 'mapped', openai_compat: 'forwarded', cli: 'mapped' },
  store: {
    ollama: when(isFalse),
    openai_compat: when(isFalse),
    cli: when(isFalse),
    why: 'the edge stores no completions',
  },
  service_tier: {
    ollama: when(isOneOf('auto', 'default')),
    openai_compat: 'forwarded',
    cli: when(isOneOf('auto', 'default')),
    why: 'it has no service tiers',
  },
};

const CHAT: Record<string, FieldRule> = {
  ...COMMON,
  messages: MAPPED,
  stream_options: MAPPED,
  max_tokens: SAMPLING,
  max_completion_tokens: SAMPLING,
  stop: SAMPLING,
  response_format: {
    ollama: when(isKnownFormat),
    openai_compat: 'mapped',
    cli: when(isTextFormat),
    why: 'a CLI agent cannot be held to an output format',
  },
  logprobs: { ollama: when(isFalse), openai_compat: when(isFalse), cli: when(isFalse), why: LOGPROBS_WHY },
  top_logprobs: {
    ollama: when(isOneOf(0)),
    openai_compat: when(isOneOf(0)),
    cli: when(isOneOf(0)),
    why: LOGPROBS_WHY,
  },
  n: {
    ollama: when(isOneOf(1)),
    openai_compat: when(isOneOf(1)),
    cli: when(isOneOf(1)),
    why: 'IOP returns one choice per request',
  },
  logit_bias: {
    ollama: when(isEmptyObject),
    openai_compat: forwardUnless(isEmptyObject),
    cli: when(isEmptyObject),
    why: 'it has no logit bias',
  },
  modalities: {
    ollama: when((value) => Array.isArray(value) && value.every((entry) => entry === 'text')),
    openai_compat: when((value) => Array.isArray(value) && value.every((entry) => entry === 'text')),
    cli: when((value) => Array.isArray(value) && value.every((entry) => entry === 'text')),
    why: 'IOP returns text only',
  },
  audio: { ollama: 'refused', openai_compat: 'refused', cli: 'refused', why: 'IOP returns text only' },
  prediction: {
    ollama: 'refused',
    openai_compat: 'forwarded',
    cli: 'refused',
    why: 'it has no predicted outputs',
  },
  web_search_options: {
    ollama: 'refused',
    openai_compat: 'refused',
    cli: 'refused',
    why: 'IOP runs no hosted tools',
  },
  verbosity: { ollama: 'refused', openai_compat: 'forwarded', cli: 'refused', why: 'it has no verbosity' },
  functions: {
    ollama: 'refused',
    openai_compat: 'refused',
    cli: 'refused',
    why: "the deprecated 'functions' is not supported: use 'tools'",
  },
  function_call: {
    ollama: 'refused',
    openai_compat: 'refused',
    cli: 'refused',
    why: "the deprecated 'function_call' is not supported: use 'tool_choice'",
  },
};

const isFunctionTools = (value: unknown) =>
  Array.isArray(value) &&
  value.every(
    (tool) => typeof tool === 'object' && tool !== null && (tool as { type?: unknown }).type === 'function',
  );

const RESPONSES: Record<string, FieldRule> = {
  ...COMMON,
  tools: {
    ollama: when(isFunctionTools),
    openai_compat: when(isFunctionTools),
    cli: when(isEmptyArray),
    why: 'IOP runs function tools only, no hosted tools (web_search, file_search, ...), and a CLI agent uses its own tools',
  },
  input: MAPPED,
  instructions: MAPPED,
  background: MAPPED,
  // Stored conversations are the edge's own (stored-conversations.ts): no backend sees either field.
  store: MAPPED,
  previous_response_id: MAPPED,
  max_output_tokens: SAMPLING,
  // `reasoning.effort` as reasoning_effort; checked like it below (nested).
  reasoning: MAPPED,
  text: MAPPED,
  include: {
    ollama: when(isAnswerableInclude),
    openai_compat: when(isAnswerableInclude),
    cli: when(isAnswerableInclude),
    why: "IOP returns no extra output items ('reasoning.encrypted_content' is taken only without include_reasoning: IOP's reasoning items have no encrypted copy)",
  },
  truncation: {
    ollama: when(isOneOf('disabled')),
    openai_compat: when(isOneOf('disabled')),
    cli: when(isOneOf('disabled')),
    why: 'IOP does not truncate the input',
  },
  max_tool_calls: {
    ollama: 'refused',
    openai_compat: 'refused',
    cli: 'refused',
    why: 'IOP does not limit tool calls',
  },
};

/** /v1/embeddings (CLI models are refused before: they cannot embed at all). */
const EMBEDDINGS: Record<string, FieldRule> = {
  model: MAPPED,
  input: MAPPED,
  // The edge encodes the vectors itself; the backend always answers floats.
  encoding_format: MAPPED,
  // Ollama's /api/embed and OpenAI-compatible servers both take `dimensions`.
  dimensions: MAPPED,
  user: COMMON['user'],
};

/** /v1/completions (CLI models are refused before: they cannot complete a raw prompt). */
const COMPLETIONS: Record<string, FieldRule> = {
  model: MAPPED,
  prompt: MAPPED,
  stream: MAPPED,
  stream_options: MAPPED,
  max_tokens: SAMPLING,
  temperature: SAMPLING,
  top_p: SAMPLING,
  stop: SAMPLING,
  seed: SAMPLING,
  presence_penalty: SAMPLING,
  frequency_penalty: SAMPLING,
  // Ollama's suffix goes through the model's template, which a raw prompt bypasses.
  suffix: {
    ollama: when(isOneOf('')),
    openai_compat: 'mapped',
    cli: 'refused',
    why: 'a raw prompt bypasses the template that applies a suffix',
  },
  echo: {
    ollama: when(isFalse),
    openai_compat: forwardUnless(isFalse),
    cli: when(isFalse),
    why: 'it cannot echo the prompt',
  },
  // The answer's `logprobs` is always null: any value asks for something IOP does not return.
  logprobs: { ollama: 'refused', openai_compat: 'refused', cli: 'refused', why: LOGPROBS_WHY },
  n: CHAT['n'],
  best_of: { ...CHAT['n'], why: 'IOP returns one choice per request' },
  logit_bias: CHAT['logit_bias'],
  user: COMMON['user'],
};

const TABLES: Record<RequestEndpoint, Record<string, FieldRule>> = {
  chat: CHAT,
  responses: RESPONSES,
  embeddings: EMBEDDINGS,
  completions: COMPLETIONS,
};

/** Every field IOP does not know: passed to OpenAI-compatible backends, refused by the others. */
const UNKNOWN: FieldRule = {
  ollama: 'refused',
  openai_compat: 'forwarded',
  cli: 'refused',
  why: 'IOP does not know this field and only OpenAI-compatible backends receive unknown fields',
};

export interface PlanOptions {
  endpoint: RequestEndpoint;
  /** The requested model (named in errors). */
  model: string;
  /** Adapter types the run may reach; empty = unknown (treated as every type). */
  backends: readonly AdapterType[];
  /** The model's `drop_unsupported`: drop what a backend cannot take instead of refusing the request. */
  dropUnsupported: boolean;
}

const EVERY_BACKEND: readonly AdapterType[] = ['ollama', 'openai_compat', 'cli'];

/**
 * Checks every top-level field of `body` (and the nested fields that carry their own semantics:
 * responses' `reasoning.effort` and `text.format`) against the backends. Dropped fields are deleted from `body`.
 * Throws 400 `unsupported_parameter` for the first field a backend refuses when the model does not drop.
 */
export function planRequestFields(body: Record<string, unknown>, options: PlanOptions): FieldPlan {
  const table = TABLES[options.endpoint];
  const backends = options.backends.length > 0 ? options.backends : EVERY_BACKEND;
  const onlyOpenAI = backends.every((backend) => backend === 'openai_compat');
  const dropped: string[] = [];
  let extraBody: Record<string, unknown> | undefined;
  const refuse = (field: string, backend: AdapterType, rule: FieldRule): void => {
    if (options.dropUnsupported) {
      dropped.push(field);
      return;
    }
    throw unsupportedParameter(field, backend, options.model, rule.why);
  };
  for (const [field, value] of Object.entries(body)) {
    // null asks for the default, like an absent field.
    if (value === null || value === undefined) continue;
    const rule = Object.hasOwn(table, field) ? table[field] : UNKNOWN;
    let forwarded = false;
    let refusedBy: AdapterType | undefined;
    for (const backend of backends) {
      const rulePart = rule[backend];
      const verdict = typeof rulePart === 'function' ? rulePart(value, body) : rulePart;
      if (verdict === 'refused' || (verdict === 'forwarded' && backend !== 'openai_compat')) {
        refusedBy = backend;
        break;
      }
      if (verdict === 'forwarded') forwarded = true;
    }
    if (refusedBy === undefined && forwarded && !onlyOpenAI)
      refusedBy = backends.find((b) => b !== 'openai_compat');
    if (refusedBy !== undefined) {
      refuse(field, refusedBy, rule);
      delete body[field];
      continue;
    }
    if (forwarded) (extraBody ??= {})[field] = value;
  }
  if (options.endpoint === 'responses') planResponsesNested(body, backends, refuse, dropped);
  return { dropped, extraBody };
}

/** `reasoning.effort` follows the chat field `reasoning_effort`; `text.format` follows `response_format`. */
function planResponsesNested(
  body: Record<string, unknown>,
  backends: readonly AdapterType[],
  refuse: (field: string, backend: AdapterType, rule: FieldRule) => void,
  dropped: string[],
): void {
  const nested: [string, string, FieldRule][] = [
    ['reasoning', 'effort', COMMON['reasoning_effort']],
    ['text', 'format', CHAT['response_format']],
    ['text', 'verbosity', CHAT['verbosity']],
  ];
  for (const [outer, inner, rule] of nested) {
    const container = body[outer];
    if (typeof container !== 'object' || container === null || Array.isArray(container)) continue;
    const record = container as Record<string, unknown>;
    const value = record[inner];
    if (value === null || value === undefined) continue;
    for (const backend of backends) {
      const rulePart = rule[backend];
      const verdict = typeof rulePart === 'function' ? rulePart(value, body) : rulePart;
      // Nested fields have no verbatim form in a chat body: forwarding is not possible for them.
      if (verdict === 'mapped') continue;
      const before = dropped.length;
      refuse(`${outer}.${inner}`, backend, rule);
      if (dropped.length > before) delete record[inner];
      break;
    }
  }
}

/** 400 `unsupported_parameter`: names the field, the backend and the model. */
export function unsupportedParameter(
  field: string,
  backend: AdapterType,
  model: string,
  why: string | undefined,
): OpenAIHttpError {
  const reason = why ? `: ${why}` : '';
  return new OpenAIHttpError(
    400,
    'invalid_request_error',
    'unsupported_parameter',
    `Unsupported parameter '${field}' for model '${model}': its ${BACKEND_NAMES[backend]} backend cannot take it${reason}. ` +
      "Remove it, or set 'drop_unsupported: true' on the model to drop such fields.",
    field,
  );
}

const BACKEND_NAMES: Record<AdapterType, string> = {
  ollama: 'Ollama',
  openai_compat: 'OpenAI-compatible',
  cli: 'CLI agent',
};
