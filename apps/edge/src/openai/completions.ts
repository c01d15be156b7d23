// POST /v1/completions (legacy text completion): the body's check, its run (RunRequest.kind = completion:
// the raw prompt and suffix travel in `completion`, no messages; sampling fields in the generation params) and
// the answer, one `text_completion` body or a stream of `text_completion` chunks ending in `data: [DONE]`.
// One prompt per request: a string, or an array holding one string. Token-id prompts are refused (IOP has no
// tokenizer to turn them back into text and Ollama takes text only), as are several prompts (one run is one
// completion). Reasoning the backend may report is not part of a text completion and is left out.
import { RunKind, type RunEventPart } from '@iop/wire';
import { endChunkStream, failChunkStream } from './chunk-stream-end.js';
import { invalidRequest } from './openai-error.js';
import { checkBody, compileBodySchema } from './request-validator.js';
import { dispatchRunParts } from '../surface-kit/run-part-dispatch.js';
import {
  finishReasonOf,
  usageTotals,
  type CollectedRun,
  type UsageTotals,
} from '../surface-kit/run-output.js';
import type { RunBase, SurfaceRun } from '../surface-kit/surface-run.js';
import { generationParams } from './request-inputs.js';
import type { SseSink } from '../surface-kit/sse-sink.js';

export interface CompletionsRequestBody {
  model: string;
  prompt: string | string[];
  suffix?: string | null;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  user?: string | null;
}

const number = { type: ['number', 'null'] } as const;
const schema = {
  type: 'object',
  required: ['model', 'prompt'],
  properties: {
    model: { type: 'string', minLength: 1 },
    prompt: {
      anyOf: [{ type: 'string' }, { type: 'array', minItems: 1, maxItems: 1, items: { type: 'string' } }],
    },
    suffix: { type: ['string', 'null'] },
    max_tokens: { type: ['integer', 'null'], minimum: 1 },
    temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
    top_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    stop: {
      anyOf: [
        { type: 'string' },
        { type: 'array', maxItems: 4, items: { type: 'string' } },
        { type: 'null' },
      ],
    },
    seed: { type: ['integer', 'null'] },
    presence_penalty: number,
    frequency_penalty: number,
    stream: { type: ['boolean', 'null'] },
    stream_options: {
      anyOf: [
        { type: 'object', properties: { include_usage: { type: ['boolean', 'null'] } } },
        { type: 'null' },
      ],
    },
    user: { type: ['string', 'null'] },
  },
} as const;

const validateBody = compileBodySchema<CompletionsRequestBody>(schema);

export function validateCompletionsRequest(body: unknown): CompletionsRequestBody {
  return checkBody(body, validateBody, refuseTokenOrManyPrompts);
}

function refuseTokenOrManyPrompts(body: Record<string, unknown>): void {
  const prompt = body['prompt'];
  if (!Array.isArray(prompt)) return;
  if (prompt.some((entry) => typeof entry === 'number' || Array.isArray(entry))) {
    throw invalidRequest(
      "Token ids in 'prompt' are not supported: send the text (IOP has no tokenizer and Ollama takes text only)",
      'prompt',
      'unsupported_parameter',
    );
  }
  if (prompt.length > 1) {
    throw invalidRequest(
      `'prompt' holds ${prompt.length} prompts: IOP completes one prompt per request (send one request each)`,
      'prompt',
      'unsupported_parameter',
    );
  }
}

/** The run of a completions request: no messages, the prompt (and suffix) in `completion`. */
export function completionsRun(body: CompletionsRequestBody, base: RunBase): SurfaceRun {
  const prompt = typeof body.prompt === 'string' ? body.prompt : (body.prompt[0] ?? '');
  // Only the sampling fields: reasoning switches are not completion fields (unknown ones are forwarded or refused).
  const sampling = {
    model: body.model,
    temperature: body.temperature,
    top_p: body.top_p,
    seed: body.seed,
    presence_penalty: body.presence_penalty,
    frequency_penalty: body.frequency_penalty,
  };
  const { params } = generationParams(sampling, body.max_tokens, body.stop);
  return {
    spec: {
      session: base.session,
      timeoutMs: base.timeoutMs,
      messages: [],
      tools: [],
      params,
      kind: RunKind.RUN_KIND_COMPLETION,
      completion: { prompt, suffix: body.suffix ?? '' },
      metadata: {},
      reasoningRequested: false,
    },
    caller: { includeReasoning: false },
  };
}

export interface CompletionOutputContext {
  /** `cmpl-…` */
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  includeUsage: boolean;
}

function completionUsage(usage: UsageTotals): Record<string, unknown> {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.totalTokens,
  };
}

/** The whole `text_completion` answer. */
export function completionBody(context: CompletionOutputContext, run: CollectedRun): Record<string, unknown> {
  return {
    id: context.id,
    object: 'text_completion',
    created: context.created,
    model: context.model,
    choices: [{ text: run.text, index: 0, logprobs: null, finish_reason: run.finishReason }],
    usage: completionUsage(run.usage),
  };
}

/**
 * Streams a run as `text_completion` chunks, then (with `stream_options.include_usage`) a usage chunk, then
 * `data: [DONE]`. Throws (before anything is written) if the run fails first, so the caller can answer with an
 * HTTP error; a failure after output started becomes an SSE error object.
 */
export async function streamCompletion(
  parts: AsyncIterable<RunEventPart>,
  sink: SseSink,
  context: CompletionOutputContext,
): Promise<void> {
  const head =
    `data: {"id":"${context.id}","object":"text_completion","created":${context.created},` +
    `"model":${JSON.stringify(context.model)},"choices":[{"text":`;
  const usageField = context.includeUsage ? ',"usage":null' : '';
  const open = `,"index":0,"logprobs":null,"finish_reason":null}]${usageField}}\n\n`;
  return dispatchRunParts(parts, sink, {
    text: (text) => sink.write(head + JSON.stringify(text) + open),
    complete: async (finishReason, usage) => {
      const finish = finishReasonOf(finishReason, false);
      await sink.write(`${head}"","index":0,"logprobs":null,"finish_reason":"${finish}"}]${usageField}}\n\n`);
      await endChunkStream(
        sink,
        { ...context, object: 'text_completion' },
        completionUsage(usageTotals(usage)),
      );
    },
    fail: (code, message) => failChunkStream(sink, code, message),
  });
}
