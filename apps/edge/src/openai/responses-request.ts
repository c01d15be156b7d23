// /v1/responses body → the run it asks for (surface-kit/surface-run.ts). `instructions` becomes the leading system message; input items become chat
// messages (function_call → assistant tool call, function_call_output → tool message). Reasoning items that
// clients replay are dropped (the node has no use for them); non-function tools (web_search, ...) are ignored
// because no IOP adapter can execute hosted tools.
import { create, type ChatMessage } from '@iop/wire';
import { invalidRequest } from './openai-error.js';
import type {
  ResponseFormatBody,
  ResponsesContentPart,
  ResponsesInputItem,
  ResponsesRequestBody,
} from './request-schemas.js';
import { toolDefinition, type RunBase, type SurfaceRun } from '../surface-kit/surface-run.js';
import { generationParams, imageInput, splitMetadata } from './request-inputs.js';

export function responsesRun(body: ResponsesRequestBody, base: RunBase): SurfaceRun {
  const { params, reasoningRequested, includeReasoning } = generationParams(
    body,
    body.max_output_tokens,
    undefined,
    body.reasoning?.effort,
    chatResponseFormat(body.text?.format),
  );
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push(create.chatMessage({ role: 'system', content: body.instructions }));
  if (typeof body.input === 'string')
    messages.push(create.chatMessage({ role: 'user', content: body.input }));
  else body.input.forEach((item, index) => addItem(messages, item, index));
  if (messages.length === 0) throw invalidRequest("'input' must contain at least one message", 'input');
  const { workspace, metadata } = splitMetadata(body.metadata);
  return {
    spec: {
      session: base.session,
      timeoutMs: base.timeoutMs,
      messages,
      tools: (body.tools ?? [])
        .filter((tool) => tool.type === 'function' && tool.name)
        .map((tool) => toolDefinition(tool.name ?? '', tool.description, tool.parameters)),
      toolChoiceJson: body.tool_choice == null ? undefined : JSON.stringify(chatToolChoice(body.tool_choice)),
      params,
      reasoningRequested,
      workspace,
      metadata,
    },
    caller: { includeReasoning },
  };
}

function addItem(messages: ChatMessage[], item: ResponsesInputItem, index: number): void {
  const param = `input[${index}]`;
  const type = item.type ?? 'message';
  switch (type) {
    case 'message': {
      if (!item.role) throw invalidRequest(`Missing required parameter: '${param}.role'`, `${param}.role`);
      const { text, images, imageUrls } = contentOf(item.content, `${param}.content`);
      messages.push(
        create.chatMessage({
          role: item.role === 'developer' ? 'system' : item.role,
          content: text,
          images,
          imageUrls,
        }),
      );
      return;
    }
    case 'function_call': {
      const call = create.toolCall({
        id: item.call_id ?? '',
        name: item.name ?? '',
        argumentsJson: item.arguments ?? '',
      });
      const last = messages[messages.length - 1];
      // Parallel calls arrive as consecutive items; they belong to one assistant turn.
      if (last && last.role === 'assistant' && last.toolCalls.length > 0) {
        last.toolCalls.push({ ...call, index: last.toolCalls.length });
      } else {
        messages.push(create.chatMessage({ role: 'assistant', toolCalls: [call] }));
      }
      return;
    }
    case 'function_call_output': {
      const { text } = contentOf(item.output, `${param}.output`);
      messages.push(create.chatMessage({ role: 'tool', toolCallId: item.call_id ?? '', content: text }));
      return;
    }
    case 'reasoning':
      return;
    default:
      throw invalidRequest(`Unsupported input item type '${type}' at '${param}'`, `${param}.type`);
  }
}

function contentOf(
  content: string | ResponsesContentPart[] | undefined,
  param: string,
): { text: string; images: string[]; imageUrls: string[] } {
  if (content === undefined) return { text: '', images: [], imageUrls: [] };
  if (typeof content === 'string') return { text: content, images: [], imageUrls: [] };
  const texts: string[] = [];
  const images: string[] = [];
  const imageUrls: string[] = [];
  content.forEach((part, index) => {
    if (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text')
      texts.push(part.text ?? '');
    else if (part.type === 'input_image' && part.image_url) {
      const image = imageInput(part.image_url, `${param}[${index}].image_url`);
      if ('url' in image) imageUrls.push(image.url);
      else images.push(image.base64);
    } else
      throw invalidRequest(
        `Unsupported content part type '${part.type}' at '${param}[${index}]'`,
        `${param}[${index}].type`,
      );
  });
  return { text: texts.join('\n'), images, imageUrls };
}

/** Responses `text.format` (json_schema fields at its top level) → the chat `response_format` shape. */
function chatResponseFormat(
  format: NonNullable<ResponsesRequestBody['text']>['format'],
): ResponseFormatBody | undefined {
  if (format == null) return undefined;
  if (format.type !== 'json_schema') return { type: format.type };
  const { type: _type, ...schema } = format;
  return { type: 'json_schema', json_schema: schema };
}

/** Responses `{type:'function', name}` → chat `{type:'function', function:{name}}`; strings pass unchanged. */
function chatToolChoice(choice: string | Record<string, unknown>): unknown {
  if (typeof choice === 'string') return choice;
  if (choice['type'] === 'function' && typeof choice['name'] === 'string') {
    return { type: 'function', function: { name: choice['name'] } };
  }
  return choice;
}
