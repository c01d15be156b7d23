// Validates request bodies at the HTTP boundary: provider-specific fields are refused by name first (so the error
// says which field), then the body is checked against its ajv schema (compiled once at module load).
import { createAjv } from '@iop/config';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { invalidRequest } from './openai-error.js';
import {
  chatRequestSchema,
  responsesRequestSchema,
  type ChatRequestBody,
  type ResponsesRequestBody,
} from './request-schemas.js';

/**
 * Top-level fields of Ollama's native API, refused on every model: their OpenAI forms are the top-level fields
 * (max_tokens, temperature, response_format, ...). vLLM's own fields (chat_template_kwargs, top_k, guided_json,
 * ...) are not listed: they reach OpenAI-compatible backends like every field IOP does not know
 * (request-fields.ts).
 */
export const UNSUPPORTED_TOP_LEVEL_FIELDS = ['options', 'format', 'keep_alive'] as const;
/** Metadata keys that older IOP consumers used to steer providers; `metadata.workspace` is the only key read. */
export const UNSUPPORTED_METADATA_KEYS = ['source', 'cli', 'inference'] as const;

const ajv = createAjv({ allErrors: false, strict: false, allowUnionTypes: true });
const validateChat = ajv.compile<ChatRequestBody>(chatRequestSchema);
const validateResponses = ajv.compile<ResponsesRequestBody>(responsesRequestSchema);

export function validateChatRequest(body: unknown): ChatRequestBody {
  return validate(body, validateChat);
}

export function validateResponsesRequest(body: unknown): ResponsesRequestBody {
  return validate(body, validateResponses);
}

function validate<T>(body: unknown, check: ValidateFunction<T>): T {
  return checkBody(body, check, rejectProviderFields);
}

/** Compiles a request body schema with the surface's one ajv instance (once, at module load). */
export function compileBodySchema<T>(schema: object): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}

/**
 * The body as T when it is a JSON object that `precheck` lets through (it throws the 400 that names a refused
 * field) and that matches `check`; otherwise a 400 naming the first field that does not.
 */
export function checkBody<T>(
  body: unknown,
  check: ValidateFunction<T>,
  precheck?: (body: Record<string, unknown>) => void,
): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object', null, 'invalid_body');
  }
  precheck?.(body as Record<string, unknown>);
  if (!check(body))
    throw invalidRequest(describeSchemaError(check.errors?.[0]), schemaErrorParam(check.errors?.[0]));
  return body;
}

function rejectProviderFields(body: Record<string, unknown>): void {
  for (const field of UNSUPPORTED_TOP_LEVEL_FIELDS) {
    if (field in body) {
      throw invalidRequest(
        `Unsupported field '${field}': Ollama-native request fields are not accepted; use the OpenAI top-level fields (max_tokens, temperature, top_p, stop, response_format, ...)`,
        field,
        'unsupported_field',
      );
    }
  }
  const metadata = body['metadata'];
  if (typeof metadata !== 'object' || metadata === null) return;
  for (const key of UNSUPPORTED_METADATA_KEYS) {
    if (key in metadata) {
      throw invalidRequest(
        `Unsupported field 'metadata.${key}': metadata is caller-defined string metadata and IOP reads only 'metadata.workspace'`,
        `metadata.${key}`,
        'unsupported_field',
      );
    }
  }
}

/** The body path an ajv error points at (`messages[0].role`), or null for the body itself. */
export function schemaErrorParam(error: ErrorObject | undefined): string | null {
  if (!error) return null;
  let path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`))
    .join('')
    .replace(/^\./, '');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty?: string }).missingProperty ?? '';
    path = path ? `${path}.${missing}` : missing;
  }
  return path || null;
}

/** An ajv error as the message of a 400 answer. */
export function describeSchemaError(error: ErrorObject | undefined): string {
  if (!error) return 'The request body is invalid';
  const param = schemaErrorParam(error);
  if (error.keyword === 'required') return `Missing required parameter: '${param ?? ''}'`;
  if (error.keyword === 'enum') {
    const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `Invalid value for '${param ?? 'body'}': expected one of ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
  }
  return `Invalid value for '${param ?? 'body'}': ${error.message ?? 'invalid'}`;
}
