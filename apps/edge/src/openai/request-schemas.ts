// JSON Schemas (ajv) and TypeScript shapes of the two request bodies the surface accepts. The schemas check the
// fields IOP reads; what happens to every other field (forwarded, refused or dropped per backend) is decided by
// request-fields.ts, and Ollama-native fields are refused by request-validator.ts before the schema runs.

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
  seed?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
}

/** OpenAI `response_format` (chat) — `text.format` in responses has the json_schema fields at its top level. */
export interface ResponseFormatBody {
  type: 'text' | 'json_object' | 'json_schema';
  json_schema?: {
    name?: string;
    description?: string;
    schema?: Record<string, unknown>;
    strict?: boolean | null;
  };
}

export interface ChatRequestBody extends GenerationFieldsBody {
  messages: ChatMessageBody[];
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  tools?: FunctionToolBody[] | null;
  response_format?: ResponseFormatBody | null;
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
  /** Keep the response for `previous_response_id` and GET by id; absent = true (OpenAI's default). */
  store?: boolean | null;
  previous_response_id?: string | null;
  max_output_tokens?: number | null;
  tools?: ResponsesToolBody[] | null;
  reasoning?: { effort?: string | null; summary?: string | null } | null;
  text?: {
    format?: {
      type: 'text' | 'json_object' | 'json_schema';
      name?: string;
      description?: string;
      schema?: Record<string, unknown>;
      strict?: boolean | null;
    } | null;
    verbosity?: string | null;
  } | null;
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
  n: { type: ['integer', 'null'], minimum: 1 },
  seed: { type: ['integer', 'null'], minimum: -9007199254740991, maximum: 9007199254740991 },
  presence_penalty: nullableNumber(-2, 2),
  frequency_penalty: nullableNumber(-2, 2),
} as const;

const formatType = { type: 'string', enum: ['text', 'json_object', 'json_schema'] } as const;
const jsonSchemaFields = {
  name: { type: 'string', minLength: 1, maxLength: 64 },
  description: { type: 'string' },
  schema: { type: 'object' },
  strict: { type: ['boolean', 'null'] },
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
    response_format: {
      type: ['object', 'null'],
      required: ['type'],
      properties: {
        type: formatType,
        json_schema: { type: 'object', required: ['name'], properties: jsonSchemaFields },
      },
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
    store: { type: ['boolean', 'null'] },
    previous_response_id: { type: ['string', 'null'], minLength: 1 },
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
    text: {
      type: ['object', 'null'],
      properties: {
        format: {
          type: ['object', 'null'],
          required: ['type'],
          properties: { type: formatType, ...jsonSchemaFields },
        },
        verbosity: { type: ['string', 'null'] },
      },
    },
  },
} as const;
