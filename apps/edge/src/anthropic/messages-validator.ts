// Validates Messages API bodies at the HTTP boundary: top-level fields outside the mapped and ignored lists, and
// nested options IOP cannot honour, are refused by name first; then the body is checked against its ajv schema
// (compiled once at module load) and the first problem is reported with its path.
import { createAjv } from '@iop/config';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { invalidRequest } from './anthropic-error.js';
import {
  COUNT_TOKENS_FIELDS,
  countTokensSchema,
  IGNORED_FIELDS,
  MAPPED_FIELDS,
  messagesSchema,
  type MessagesInputBody,
  type MessagesRequestBody,
} from './messages-schema.js';

const ajv = createAjv({ allErrors: false, strict: false, allowUnionTypes: true });
const checkMessages = ajv.compile<MessagesRequestBody>(messagesSchema);
const checkCountTokens = ajv.compile<MessagesInputBody>(countTokensSchema);

const MESSAGES_KNOWN: ReadonlySet<string> = new Set([...MAPPED_FIELDS, ...IGNORED_FIELDS]);
const COUNT_TOKENS_KNOWN: ReadonlySet<string> = new Set([...COUNT_TOKENS_FIELDS, ...IGNORED_FIELDS]);

export function validateMessagesRequest(body: unknown): MessagesRequestBody {
  return validate(body, MESSAGES_KNOWN, checkMessages);
}

export function validateCountTokensRequest(body: unknown): MessagesInputBody {
  return validate(body, COUNT_TOKENS_KNOWN, checkCountTokens);
}

function validate<T>(body: unknown, known: ReadonlySet<string>, check: ValidateFunction<T>): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object');
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((field) => !known.has(field));
  if (unknown.length > 0) {
    throw invalidRequest(
      `${unknown.join(', ')}: ${unknown.length === 1 ? 'this field is' : 'these fields are'} not supported by IOP (extra inputs are not permitted)`,
    );
  }
  refuseNested(fields);
  if (!check(body)) throw invalidRequest(describe(deepest(check.errors ?? [])));
  return body;
}

/** Nested options the schema would accept by shape but IOP cannot honour: refused with their path. */
function refuseNested(body: Record<string, unknown>): void {
  const metadata = asObject(body['metadata']);
  for (const key of Object.keys(metadata ?? {})) {
    if (key !== 'user_id') throw invalidRequest(`metadata.${key}: extra inputs are not permitted`);
  }
  const output = asObject(body['output_config']);
  for (const key of Object.keys(output ?? {})) {
    if (key === 'effort') continue;
    throw invalidRequest(
      key === 'format'
        ? 'output_config.format: structured outputs are not supported by IOP through the Messages API'
        : `output_config.${key}: extra inputs are not permitted`,
    );
  }
  const tools = body['tools'];
  if (Array.isArray(tools)) {
    tools.forEach((tool, index) => {
      const type = asObject(tool)?.['type'];
      if (type !== undefined && type !== 'custom') {
        throw invalidRequest(
          `tools.${index}.type: ${JSON.stringify(type)} is a server tool, which IOP backends do not run; only custom tools (name, description, input_schema) are supported`,
        );
      }
    });
  }
  const choice = asObject(body['tool_choice']);
  if (choice?.['disable_parallel_tool_use'] === true) {
    throw invalidRequest(
      'tool_choice.disable_parallel_tool_use: not supported by IOP (the backend decides how many tools it calls)',
    );
  }
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The most specific problem: alternatives (`anyOf`) report one error per branch, and the branch that got
 * furthest into the value (a block's `type`, not "content must be a string") says what is wrong.
 */
function deepest(errors: ErrorObject[]): ErrorObject | undefined {
  let best: ErrorObject | undefined;
  let bestDepth = -1;
  for (const error of errors) {
    if (error.keyword === 'anyOf' || error.keyword === 'if') continue;
    const depth = error.instancePath.split('/').length + (error.keyword === 'required' ? 1 : 0);
    if (depth > bestDepth) {
      best = error;
      bestDepth = depth;
    }
  }
  return best ?? errors[0];
}

/** The failing value's path in Anthropic's dotted style (`messages.0.content.1.text`). */
function pathOf(error: ErrorObject): string {
  const segments = error.instancePath.split('/').slice(1);
  if (error.keyword === 'required') {
    segments.push((error.params as { missingProperty?: string }).missingProperty ?? '');
  }
  return segments.join('.') || 'body';
}

function describe(error: ErrorObject | undefined): string {
  if (!error) return 'The request body is invalid';
  const path = pathOf(error);
  if (error.keyword === 'required') return `${path}: Field required`;
  if (error.keyword === 'enum') {
    const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `${path}: Input should be ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
  }
  if (error.keyword === 'const') {
    return `${path}: Input should be ${JSON.stringify((error.params as { allowedValue?: unknown }).allowedValue)}`;
  }
  return `${path}: ${error.message ?? 'invalid value'}`;
}
