// /v1/chat/completions body → the run it asks for (the service's RunSpec, and how the caller reads the answer).
import { create, type ChatMessage, type ToolCall } from '@iop/wire';
import { invalidRequest } from './openai-error.js';
import type { ChatMessageBody, ChatRequestBody } from './request-schemas.js';
import { toolDefinition, type RunBase, type SurfaceRun } from '../surface-kit/surface-run.js';
import { generationParams, imageInput, splitMetadata } from './request-inputs.js';

export function chatRun(body: ChatRequestBody, base: RunBase): SurfaceRun {
  const { params, reasoningRequested, includeReasoning } = generationParams(
    body,
    body.max_completion_tokens ?? body.max_tokens,
    body.stop,
    undefined,
    body.response_format,
  );
  const { workspace, metadata } = splitMetadata(body.metadata);
  return {
    spec: {
      session: base.session,
      timeoutMs: base.timeoutMs,
      messages: body.messages.map((message, index) => chatMessage(message, index)),
      tools: (body.tools ?? []).map((tool) =>
        toolDefinition(tool.function.name, tool.function.description, tool.function.parameters),
      ),
      toolChoiceJson: body.tool_choice == null ? undefined : JSON.stringify(body.tool_choice),
      params,
      reasoningRequested,
      workspace,
      metadata,
    },
    caller: { includeReasoning },
  };
}

function chatMessage(message: ChatMessageBody, index: number): ChatMessage {
  const images: string[] = [];
  const imageUrls: string[] = [];
  let content = '';
  if (typeof message.content === 'string') content = message.content;
  else if (Array.isArray(message.content)) {
    const texts: string[] = [];
    message.content.forEach((part, partIndex) => {
      const param = `messages[${index}].content[${partIndex}]`;
      if (part.type === 'text') texts.push(part.text ?? '');
      else if (part.type === 'image_url' && part.image_url !== undefined) {
        const url = typeof part.image_url === 'string' ? part.image_url : part.image_url.url;
        const image = imageInput(url, `${param}.image_url`);
        if ('url' in image) imageUrls.push(image.url);
        else images.push(image.base64);
      } else {
        throw invalidRequest(`Unsupported content part type '${part.type}' at '${param}'`, `${param}.type`);
      }
    });
    content = texts.join('\n');
  }
  const toolCalls: ToolCall[] = (message.tool_calls ?? []).map((call, callIndex) =>
    create.toolCall({
      id: call.id ?? '',
      name: call.function.name,
      argumentsJson: call.function.arguments ?? '',
      index: callIndex,
    }),
  );
  return create.chatMessage({
    role: message.role === 'developer' ? 'system' : message.role,
    content,
    toolCalls,
    toolCallId: message.tool_call_id ?? '',
    name: message.name ?? '',
    images,
    imageUrls,
    reasoning: message.reasoning_content ?? '',
  });
}
