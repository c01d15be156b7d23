// A validated Messages API body → the run the OpenAI endpoints build too (surface-kit/surface-run.ts):
// system prompt and conversation as chat messages, tools, a chat-completions style tool choice, and generation
// parameters. The mapping is listed in agent-contract/outer/anthropic-messages-api.md ("Request mapping").
import { create, type ChatMessage, type GenerationParams, type ToolCall } from '@iop/wire';
import type { RunSpec } from '../service/types.js';
import { toolDefinition, type RunBase, type SurfaceRun } from '../surface-kit/surface-run.js';
import { invalidRequest } from './anthropic-error.js';
import type {
  ContentBlockBody,
  ImageBlockBody,
  MessageBody,
  MessagesInputBody,
  MessagesRequestBody,
  TextBlockBody,
  ToolChoiceBody,
} from './messages-schema.js';

/** Media types Anthropic accepts for base64 images. */
const IMAGE_MEDIA_TYPES: ReadonlySet<string> = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
]);

/** The conversation part of a request (also what count_tokens estimates). */
export interface Conversation {
  messages: ChatMessage[];
  tools: NonNullable<RunSpec['tools']>;
  toolChoiceJson?: string;
}

export function messagesRun(body: MessagesRequestBody, base: RunBase): SurfaceRun {
  const { params, reasoningRequested } = generationParams(body);
  const userId = body.metadata?.user_id;
  const { messages, tools, toolChoiceJson } = conversationOf(body);
  return {
    spec: {
      session: base.session,
      timeoutMs: base.timeoutMs,
      messages,
      tools,
      toolChoiceJson,
      params,
      reasoningRequested,
      metadata: typeof userId === 'string' && userId !== '' ? { user_id: userId } : {},
    },
    // Reasoning always comes back as thinking blocks: they are part of Anthropic's response format.
    caller: { includeReasoning: true },
  };
}

export function conversationOf(body: MessagesInputBody): Conversation {
  const messages: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system !== '') messages.push(create.chatMessage({ role: 'system', content: system }));
  body.messages.forEach((message, index) => messages.push(...chatMessages(message, index)));
  const conversation: Conversation = {
    messages,
    tools: (body.tools ?? []).map((tool) => toolDefinition(tool.name, tool.description, tool.input_schema)),
  };
  if (body.tool_choice) conversation.toolChoiceJson = toolChoiceJson(body.tool_choice);
  return conversation;
}

function generationParams(body: MessagesRequestBody): {
  params: GenerationParams;
  reasoningRequested: boolean;
} {
  const thinking = body.thinking;
  const enabled = thinking?.type === 'enabled';
  const effort = enabled ? reasoningEffort(body.output_config?.effort) : '';
  const params = create.generationParams({
    maxTokens: body.max_tokens,
    temperature: body.temperature,
    topP: body.top_p,
    topK: body.top_k,
    stop: body.stop_sequences ?? [],
    reasoningEffort: effort,
    // `enabled` asks for reasoning with its budget; `disabled` turns it off; `adaptive` leaves it to the model.
    thinkingBudget: enabled ? thinking.budget_tokens : undefined,
    think: enabled ? true : thinking?.type === 'disabled' ? false : undefined,
    includeReasoning: true,
  });
  return { params, reasoningRequested: enabled };
}

/** Anthropic's effort levels on the OpenAI scale backends take (`xhigh` and `max` are its `high`). */
function reasoningEffort(effort: string | null | undefined): string {
  if (effort === 'low' || effort === 'medium' || effort === 'high') return effort;
  if (effort === 'xhigh' || effort === 'max') return 'high';
  return '';
}

function systemText(system: string | TextBlockBody[] | undefined): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system.map((block) => block.text).join('\n\n');
}

function toolChoiceJson(choice: ToolChoiceBody): string {
  switch (choice.type) {
    case 'auto':
      return '"auto"';
    case 'any':
      return '"required"';
    case 'none':
      return '"none"';
    case 'tool':
      return JSON.stringify({ type: 'function', function: { name: choice.name } });
    default: {
      const unreachable: never = choice;
      throw invalidRequest(`tool_choice: unknown type ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * One Anthropic message as chat messages: a user message's `tool_result` blocks become `tool` messages (in order,
 * before the rest of its content); an assistant message's `tool_use` blocks its tool calls and `thinking` its
 * reasoning.
 */
function chatMessages(message: MessageBody, index: number): ChatMessage[] {
  if (typeof message.content === 'string') {
    return [create.chatMessage({ role: message.role, content: message.content })];
  }
  const out: ChatMessage[] = [];
  const texts: string[] = [];
  const images: string[] = [];
  const toolCalls: ToolCall[] = [];
  let reasoning = '';
  message.content.forEach((block, blockIndex) => {
    const path = `messages.${index}.content.${blockIndex}`;
    refuseForRole(message.role, block, path);
    switch (block.type) {
      case 'text':
        texts.push(block.text);
        break;
      case 'image':
        images.push(imageData(block, path));
        break;
      case 'tool_use':
        toolCalls.push(
          create.toolCall({
            id: block.id,
            name: block.name,
            argumentsJson: JSON.stringify(block.input),
            index: toolCalls.length,
          }),
        );
        break;
      case 'tool_result':
        out.push(toolMessage(block, path));
        break;
      case 'thinking':
        reasoning += block.thinking;
        break;
      case 'redacted_thinking':
        // Encrypted by Anthropic for its own models: nothing another backend can read.
        break;
      default: {
        const unreachable: never = block;
        throw invalidRequest(`${path}.type: unknown block ${JSON.stringify(unreachable)}`);
      }
    }
  });
  if (texts.length > 0 || images.length > 0 || toolCalls.length > 0 || reasoning !== '' || out.length === 0) {
    out.push(
      create.chatMessage({
        role: message.role,
        content: texts.join('\n'),
        images,
        toolCalls,
        reasoning,
      }),
    );
  }
  return out;
}

/** Blocks a role cannot carry (Anthropic's own rules), refused with their path. */
function refuseForRole(role: MessageBody['role'], block: ContentBlockBody, path: string): void {
  const allowed =
    role === 'assistant'
      ? block.type !== 'tool_result' && block.type !== 'image'
      : role === 'user'
        ? block.type !== 'tool_use' && block.type !== 'thinking' && block.type !== 'redacted_thinking'
        : block.type === 'text';
  if (!allowed) throw invalidRequest(`${path}: a '${block.type}' block is not allowed in a ${role} message`);
}

function toolMessage(block: Extract<ContentBlockBody, { type: 'tool_result' }>, path: string): ChatMessage {
  const texts: string[] = [];
  const images: string[] = [];
  if (typeof block.content === 'string') texts.push(block.content);
  else {
    (block.content ?? []).forEach((part, partIndex) => {
      if (part.type === 'text') texts.push(part.text);
      else images.push(imageData(part, `${path}.content.${partIndex}`));
    });
  }
  const text = texts.join('\n');
  return create.chatMessage({
    role: 'tool',
    toolCallId: block.tool_use_id,
    // The backends' tool messages have no error flag: the model reads it from the text.
    content: block.is_error === true ? `Error: ${text}` : text,
    images,
  });
}

/** A base64 image's payload; URL and file sources are refused (nodes do not fetch on a caller's behalf). */
function imageData(block: ImageBlockBody, path: string): string {
  const source = block.source;
  if (source.type !== 'base64') {
    throw invalidRequest(
      `${path}.source.type: '${source.type}' image sources are not supported by IOP; send the image as base64`,
    );
  }
  if (!source.media_type || !IMAGE_MEDIA_TYPES.has(source.media_type)) {
    throw invalidRequest(
      `${path}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
    );
  }
  if (typeof source.data !== 'string' || source.data === '') {
    throw invalidRequest(`${path}.source.data: Field required`);
  }
  return source.data;
}
