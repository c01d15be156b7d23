// JSON Schemas (ajv) and TypeScript shapes of the Messages API request bodies the surface accepts
// (POST /v1/messages and /v1/messages/count_tokens). The top-level field lists decide what is mapped, what is
// accepted and ignored (it steers Anthropic's own service, not generation) and, by omission, what is refused by
// name (messages-validator.ts). Block fields such as `cache_control` and `citations` are accepted and ignored.

export interface TextBlockBody {
  type: 'text';
  text: string;
}

export interface ImageBlockBody {
  type: 'image';
  source: { type: string; media_type?: string; data?: string; url?: string };
}

export interface ToolUseBlockBody {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

export interface ToolResultBlockBody {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | (TextBlockBody | ImageBlockBody)[];
  is_error?: boolean;
}

export interface ThinkingBlockBody {
  type: 'thinking';
  thinking: string;
  signature?: string;
}

export interface RedactedThinkingBlockBody {
  type: 'redacted_thinking';
  data: string;
}

export type ContentBlockBody =
  | TextBlockBody
  | ImageBlockBody
  | ToolUseBlockBody
  | ToolResultBlockBody
  | ThinkingBlockBody
  | RedactedThinkingBlockBody;

export interface MessageBody {
  /** `system` mid-conversation (Claude Code sends them). */
  role: 'user' | 'assistant' | 'system';
  content: string | ContentBlockBody[];
}

export interface ToolBody {
  type?: 'custom';
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export type ToolChoiceBody =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export type ThinkingBody =
  | { type: 'enabled'; budget_tokens: number; display?: string }
  | { type: 'disabled' }
  | { type: 'adaptive'; display?: string };

/** Fields both endpoints take. */
export interface MessagesInputBody {
  model: string;
  messages: MessageBody[];
  system?: string | TextBlockBody[];
  tools?: ToolBody[];
  tool_choice?: ToolChoiceBody;
  thinking?: ThinkingBody;
  output_config?: { effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max' | null };
}

export interface MessagesRequestBody extends MessagesInputBody {
  max_tokens: number;
  stream?: boolean;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
}

/** Top-level fields that are mapped (anthropic-messages-api.md, "Request mapping"). */
export const MAPPED_FIELDS = [
  'model',
  'messages',
  'max_tokens',
  'system',
  'stream',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'metadata',
  'tool_choice',
  'tools',
  'thinking',
  'output_config',
] as const;

/** The fields of those that count_tokens takes. */
export const COUNT_TOKENS_FIELDS = [
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
] as const;

/**
 * Accepted and ignored: they steer Anthropic's service (prompt caching, server-side context editing, service
 * tier, geography, speed tier, diagnostics), not what the model generates.
 */
export const IGNORED_FIELDS = [
  'cache_control',
  'context_management',
  'service_tier',
  'inference_geo',
  'speed',
  'diagnostics',
] as const;

const textBlock = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: 'text' }, text: { type: 'string' } },
} as const;

const imageBlock = {
  type: 'object',
  required: ['type', 'source'],
  properties: {
    type: { const: 'image' },
    source: {
      type: 'object',
      required: ['type'],
      properties: {
        type: { type: 'string' },
        media_type: { type: 'string' },
        data: { type: 'string' },
        url: { type: 'string' },
      },
    },
  },
} as const;

/** Each block type's own fields, checked when its `type` matches (so the error names the missing field). */
const blockRules = [
  textBlock,
  imageBlock,
  {
    type: 'object',
    required: ['type', 'id', 'name', 'input'],
    properties: {
      type: { const: 'tool_use' },
      id: { type: 'string', minLength: 1 },
      name: { type: 'string', minLength: 1 },
      input: { type: 'object' },
    },
  },
  {
    type: 'object',
    required: ['type', 'tool_use_id'],
    properties: {
      type: { const: 'tool_result' },
      tool_use_id: { type: 'string', minLength: 1 },
      is_error: { type: 'boolean' },
      content: {
        anyOf: [
          { type: 'string' },
          {
            type: 'array',
            items: {
              type: 'object',
              required: ['type'],
              properties: { type: { enum: ['text', 'image'] } },
              allOf: [
                { if: { properties: { type: { const: 'text' } } }, then: textBlock },
                { if: { properties: { type: { const: 'image' } } }, then: imageBlock },
              ],
            },
          },
        ],
      },
    },
  },
  {
    type: 'object',
    required: ['type', 'thinking'],
    properties: { type: { const: 'thinking' }, thinking: { type: 'string' }, signature: { type: 'string' } },
  },
  {
    type: 'object',
    required: ['type', 'data'],
    properties: { type: { const: 'redacted_thinking' }, data: { type: 'string' } },
  },
];

const contentBlock = {
  type: 'object',
  required: ['type'],
  properties: {
    type: {
      enum: ['text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'],
    },
  },
  allOf: blockRules.map((rule) => ({
    if: { properties: { type: { const: rule.properties.type.const } } },
    then: rule,
  })),
} as const;

const inputFields = {
  model: { type: 'string', minLength: 1, maxLength: 256 },
  messages: {
    type: 'array',
    minItems: 1,
    items: {
      type: 'object',
      required: ['role', 'content'],
      properties: {
        role: { enum: ['user', 'assistant', 'system'] },
        content: { anyOf: [{ type: 'string' }, { type: 'array', items: contentBlock }] },
      },
    },
  },
  system: { anyOf: [{ type: 'string' }, { type: 'array', items: textBlock }] },
  tools: {
    type: 'array',
    items: {
      type: 'object',
      required: ['name', 'input_schema'],
      properties: {
        type: { const: 'custom' },
        name: { type: 'string', minLength: 1, maxLength: 128 },
        description: { type: 'string' },
        input_schema: { type: 'object' },
      },
    },
  },
  tool_choice: {
    type: 'object',
    required: ['type'],
    properties: {
      type: { enum: ['auto', 'any', 'tool', 'none'] },
      name: { type: 'string', minLength: 1 },
      disable_parallel_tool_use: { type: 'boolean' },
    },
    if: { properties: { type: { const: 'tool' } } },
    then: { required: ['name'] },
  },
  thinking: {
    type: 'object',
    required: ['type'],
    properties: {
      type: { enum: ['enabled', 'disabled', 'adaptive'] },
      budget_tokens: { type: 'integer', minimum: 1, maximum: 4294967295 },
      display: { type: 'string' },
    },
    if: { properties: { type: { const: 'enabled' } } },
    then: { required: ['budget_tokens'] },
  },
  output_config: {
    type: 'object',
    properties: { effort: { enum: ['low', 'medium', 'high', 'xhigh', 'max', null] } },
  },
} as const;

export const countTokensSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: inputFields,
} as const;

export const messagesSchema = {
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  properties: {
    ...inputFields,
    max_tokens: { type: 'integer', minimum: 1, maximum: 4294967295 },
    stream: { type: 'boolean' },
    stop_sequences: { type: 'array', maxItems: 16, items: { type: 'string', minLength: 1 } },
    temperature: { type: 'number', minimum: 0, maximum: 1 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: 1, maximum: 4294967295 },
    metadata: {
      type: 'object',
      properties: { user_id: { type: ['string', 'null'], maxLength: 4096 } },
    },
  },
} as const;
