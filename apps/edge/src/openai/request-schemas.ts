// JSON Schemas (ajv) and TypeScript shapes of the two request bodies the surface accepts. Fields OpenAI clients
// commonly send but IOP ignores (n=1, user, store, presence_penalty, ...) pass through; provider-specific fields are
// refused by request-validator.ts before the schema runs so the error names them.

export interface ChatContentPart {
  type: string;
  text?: string;
  image_url?: { url: string } | string;
}

export interface ChatToolCallBody {
  id?: string;
  type?: string;
  function: { name: string; arguments?: string };
}

export interface ChatMessageBody {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_calls?: ChatToolCallBody[];
  tool_call_id?: string;
  reasoning_content?: string | null;
}

export interface FunctionToolBody {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** Fields common to both endpoints. */
export interface GenerationFieldsBody {
  model: string;
  stream?: boolean;
  temperature?: number | null;
  top_p?: number | null;
  think?: boolean | string | null;
  reasoning_effort?: string | null;
  thinking_token_budget?: number | null;
  include_reasoning?: boolean | null;
  tool_choice?: string | Record<string, unknown> | null;
  metadata?: Record<string, string> | null;
}

export interface ChatRequestBody extends GenerationFieldsBody {
  messages: ChatMessageBody[];
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  tools?: FunctionToolBody[] | null;
}

export interface ResponsesContentPart {
  type: string;
  text?: string;
  image_url?: string;
}

export interface ResponsesInputItem {
  type?: string;
  role?: 'system' | 'developer' | 'user' | 'assistant';
  content?: string | ResponsesContentPart[];
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string | ResponsesContentPart[];
}

export interface ResponsesToolBody {
  type: string;
  name?: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
}

export interface ResponsesRequestBody extends GenerationFieldsBody {
  input: string | ResponsesInputItem[];
  instructions?: string | null;
  background?: boolean | null;
  max_output_tokens?: number | null;
  tools?: ResponsesToolBody[] | null;
  reasoning?: { effort?: string | null; summary?: string | null } | null;
}

const nullableNumber = (minimum: number, maximum?: number) => ({
  type: ['number', 'null'],
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
});
const nullableCount = { type: ['integer', 'null'], minimum: 0, maximum: 4294967295 };

const generationFields = {
  model: { type: 'string', minLength: 1 },
  stream: { type: ['boolean', 'null'] },
  temperature: nullableNumber(0, 2),
  top_p: nullableNumber(0, 1),
  think: { type: ['boolean', 'string', 'null'] },
  reasoning_effort: { type: ['string', 'null'] },
  thinking_token_budget: nullableCount,
  include_reasoning: { type: ['boolean', 'null'] },
  tool_choice: {
    anyOf: [{ type: 'string', enum: ['none', 'auto', 'required'] }, { type: 'object' }, { type: 'null' }],
  },
  metadata: {
    type: ['object', 'null'],
    additionalProperties: { type: 'string', maxLength: 4096 },
  },
  n: { type: ['integer', 'null'], minimum: 1, maximum: 1 },
} as const;

const chatContent = {
  anyOf: [
    { type: 'string' },
    { type: 'null' },
    {
      type: 'array',
      items: {
        type: 'object',
        required: ['type'],
        properties: {
          type: { type: 'string' },
          text: { type: 'string' },
          image_url: {
            anyOf: [
              { type: 'string' },
              { type: 'object', required: ['url'], properties: { url: { type: 'string' } } },
            ],
          },
        },
      },
    },
  ],
} as const;

export const chatRequestSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    ...generationFields,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
          content: chatContent,
          name: { type: 'string' },
          tool_call_id: { type: 'string' },
          reasoning_content: { type: ['string', 'null'] },
          tool_calls: {
            type: 'array',
            items: {
              type: 'object',
              required: ['function'],
              properties: {
                id: { type: 'string' },
                type: { type: 'string' },
                function: {
                  type: 'object',
                  required: ['name'],
                  properties: { name: { type: 'string' }, arguments: { type: 'string' } },
                },
              },
            },
          },
        },
      },
    },
    stream_options: {
      type: ['object', 'null'],
      properties: { include_usage: { type: 'boolean' } },
    },
    max_tokens: nullableCount,
    max_completion_tokens: nullableCount,
    stop: {
      anyOf: [
        { type: 'string' },
        { type: 'array', maxItems: 16, items: { type: 'string' } },
        { type: 'null' },
      ],
    },
    tools: {
      type: ['array', 'null'],
      items: {
        type: 'object',
        required: ['type', 'function'],
        properties: {
          type: { type: 'string', enum: ['function'] },
          function: {
            type: 'object',
            required: ['name'],
            properties: {
              name: { type: 'string', minLength: 1 },
              description: { type: 'string' },
              parameters: { type: 'object' },
            },
          },
        },
      },
    },
  },
} as const;

const responsesContent = {
  anyOf: [
    { type: 'string' },
    {
      type: 'array',
      items: {
        type: 'object',
        required: ['type'],
        properties: { type: { type: 'string' }, text: { type: 'string' }, image_url: { type: 'string' } },
      },
    },
  ],
} as const;

export const responsesRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    ...generationFields,
    input: {
      anyOf: [
        { type: 'string' },
        {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              type: { type: 'string' },
              role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant'] },
              content: responsesContent,
              call_id: { type: 'string' },
              name: { type: 'string' },
              arguments: { type: 'string' },
              output: responsesContent,
            },
          },
        },
      ],
    },
    instructions: { type: ['string', 'null'] },
    background: { type: ['boolean', 'null'] },
    max_output_tokens: nullableCount,
    tools: {
      type: ['array', 'null'],
      items: {
        type: 'object',
        required: ['type'],
        properties: {
          type: { type: 'string' },
          name: { type: 'string' },
          description: { type: ['string', 'null'] },
          parameters: { type: ['object', 'null'] },
        },
      },
    },
    reasoning: {
      type: ['object', 'null'],
      properties: { effort: { type: ['string', 'null'] }, summary: { type: ['string', 'null'] } },
    },
  },
} as const;
