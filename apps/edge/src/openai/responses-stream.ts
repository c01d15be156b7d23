// /v1/responses as server-sent events, the sequence the official SDK's `responses.stream().finalResponse()` and
// the codex CLI accept: response.created → response.in_progress → per output item: output_item.added →
// (content_part.added → output_text.delta… → output_text.done → content_part.done |
// function_call_arguments.delta… → .done) → output_item.done → response.completed (or response.incomplete when
// the token limit stopped the run). A failure after the stream started sends response.failed and then an `error`
// event, and the stream ends. One ResponsesEventWriter per stream holds the open items; each run part is one of
// its named steps.
import type { RunEventPart, ToolCall, Usage } from '@iop/wire';
import { randomId } from '../surface-kit/ids.js';
import { dispatchRunParts } from '../surface-kit/run-part-dispatch.js';
import { finishReasonOf, ToolCallTracker, usageTotals } from '../surface-kit/run-output.js';
import type { SseSink } from '../surface-kit/sse-sink.js';
import { runFailed } from '../surface-kit/surface-error.js';
import { errorDataObject } from './openai-error.js';
import {
  itemBody,
  outputText,
  responseObject,
  statusOf,
  type OutputItem,
  type ResponsesOutputContext,
} from './responses-output.js';

interface OpenItem {
  item: OutputItem;
  outputIndex: number;
}

type FunctionCallItem = Extract<OutputItem, { type: 'function_call' }>;

/**
 * Streams a run as Responses events; throws before writing anything when the run fails first. `onEnded` receives
 * the final Response object (completed or incomplete) before its last event is written.
 */
export function streamResponse(
  parts: AsyncIterable<RunEventPart>,
  sink: SseSink,
  context: ResponsesOutputContext,
  onEnded?: (response: Record<string, unknown>) => void,
): Promise<void> {
  const writer = new ResponsesEventWriter(sink, context, onEnded);
  return dispatchRunParts(parts, sink, {
    text: (text) => writer.text(text),
    reasoning: (text) => writer.reasoning(text),
    toolCall: (call) => writer.toolCall(call),
    complete: (finishReason, usage) => writer.complete(finishReason, usage),
    fail: (code, message, usage) => writer.fail(code, message, usage),
  });
}

class ResponsesEventWriter {
  private sequence = 0;
  private readonly items: OutputItem[] = [];
  private readonly tools = new ToolCallTracker();
  private readonly callItems = new Map<string, OpenItem>();
  private message: OpenItem | undefined;
  private reasoningItem: OpenItem | undefined;
  private openCall: OpenItem | undefined;
  private thinkOpen = false;

  constructor(
    private readonly sink: SseSink,
    private readonly context: ResponsesOutputContext,
    private readonly onEnded: ((response: Record<string, unknown>) => void) | undefined,
  ) {}

  async text(text: string): Promise<void> {
    await this.closeThink();
    await this.appendText(text);
  }

  async reasoning(text: string): Promise<void> {
    const { includeReasoning, inlineReasoning } = this.context.output;
    if (includeReasoning) {
      if (!this.reasoningItem) {
        await this.closeMessage();
        await this.closeCall();
        this.reasoningItem = await this.addItem({ type: 'reasoning', id: `rs_${randomId()}`, text: '' });
        await this.send(
          'response.content_part.added',
          `${where(this.reasoningItem)},"content_index":0,"part":{"type":"reasoning_text","text":""}`,
        );
      }
      const open = this.reasoningItem;
      if (open.item.type === 'reasoning') open.item.text += text;
      await this.send(
        'response.reasoning_text.delta',
        `${where(open)},"content_index":0,"delta":${JSON.stringify(text)}`,
      );
    } else if (inlineReasoning) {
      await this.appendText(this.thinkOpen ? text : `<think>${text}`);
      this.thinkOpen = true;
    }
  }

  async toolCall(toolCall: ToolCall): Promise<void> {
    await this.closeThink();
    const { call, isNew, argumentsDelta } = this.tools.add(toolCall);
    let open = this.callItems.get(call.id);
    if (isNew || !open) {
      await this.closeMessage();
      await this.closeReasoning();
      await this.closeCall();
      open = await this.addItem({
        type: 'function_call',
        id: `fc_${randomId()}`,
        callId: call.id,
        name: call.name,
        arguments: '',
      });
      this.callItems.set(call.id, open);
      this.openCall = open;
    }
    if (open.item.type === 'function_call') open.item.arguments += argumentsDelta;
    if (argumentsDelta !== '') {
      await this.send(
        'response.function_call_arguments.delta',
        `${where(open)},"delta":${JSON.stringify(argumentsDelta)}`,
      );
    }
  }

  async complete(finishReason: string, usage: Usage | undefined): Promise<void> {
    await this.closeThink();
    if (this.items.length === 0) await this.openMessage();
    await this.closeReasoning();
    await this.closeMessage();
    await this.closeCall();
    const status = statusOf(finishReasonOf(finishReason, this.tools.calls.length > 0));
    const type = status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    const response = responseObject(this.context, status, this.items, usageTotals(usage));
    this.onEnded?.(response);
    await this.send(type, `"response":${JSON.stringify(response)}`);
  }

  async fail(code: string, errorMessage: string, usage: Usage | undefined): Promise<void> {
    const error = runFailed(code, errorMessage);
    if (!this.sink.started) throw error;
    const failed = JSON.stringify(
      responseObject(this.context, 'failed', this.items, usage ? usageTotals(usage) : null, {
        code,
        message: errorMessage,
      }),
    );
    await this.send('response.failed', `"response":${failed}`);
    const body = errorDataObject(error);
    await this.send(
      'error',
      `"code":${JSON.stringify(code)},"message":${JSON.stringify(errorMessage)},"param":null,"error":${JSON.stringify(body.error)}`,
    );
  }

  /** Writes one event; the first one is preceded by response.created and response.in_progress. */
  private async send(type: string, body: string): Promise<void> {
    if (this.sequence === 0) {
      const created = JSON.stringify(responseObject(this.context, 'in_progress', [], null));
      await this.sink.write(
        `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":${created}}\n\n`,
      );
      await this.sink.write(
        `event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":${created}}\n\n`,
      );
      this.sequence = 2;
    }
    await this.sink.write(
      `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.sequence++},${body}}\n\n`,
    );
  }

  private async addItem(item: OutputItem): Promise<OpenItem> {
    const open = { item, outputIndex: this.items.length };
    this.items.push(item);
    await this.send(
      'response.output_item.added',
      `"output_index":${open.outputIndex},"item":${JSON.stringify(itemBody(item, 'in_progress'))}`,
    );
    return open;
  }

  private async openMessage(): Promise<OpenItem> {
    if (this.message) return this.message;
    await this.closeReasoning();
    await this.closeCall();
    const message = await this.addItem({ type: 'message', id: `msg_${randomId()}`, text: '' });
    this.message = message;
    await this.send(
      'response.content_part.added',
      `${where(message)},"content_index":0,"part":${JSON.stringify(outputText(''))}`,
    );
    return message;
  }

  private async appendText(text: string): Promise<void> {
    const open = await this.openMessage();
    if (open.item.type === 'message') open.item.text += text;
    await this.send(
      'response.output_text.delta',
      `${where(open)},"content_index":0,"delta":${JSON.stringify(text)},"logprobs":[]`,
    );
  }

  private async closeMessage(): Promise<void> {
    if (!this.message || this.message.item.type !== 'message') return;
    const open = this.message;
    this.message = undefined;
    const text = open.item.type === 'message' ? open.item.text : '';
    await this.send(
      'response.output_text.done',
      `${where(open)},"content_index":0,"text":${JSON.stringify(text)},"logprobs":[]`,
    );
    await this.send(
      'response.content_part.done',
      `${where(open)},"content_index":0,"part":${JSON.stringify(outputText(text))}`,
    );
    await this.itemDone(open);
  }

  private async closeReasoning(): Promise<void> {
    if (!this.reasoningItem) return;
    const open = this.reasoningItem;
    this.reasoningItem = undefined;
    const text = open.item.type === 'reasoning' ? open.item.text : '';
    await this.send(
      'response.reasoning_text.done',
      `${where(open)},"content_index":0,"text":${JSON.stringify(text)}`,
    );
    await this.send(
      'response.content_part.done',
      `${where(open)},"content_index":0,"part":${JSON.stringify({ type: 'reasoning_text', text })}`,
    );
    await this.itemDone(open);
  }

  private async closeCall(): Promise<void> {
    if (!this.openCall || this.openCall.item.type !== 'function_call') return;
    const open = this.openCall;
    this.openCall = undefined;
    const item = open.item as FunctionCallItem;
    await this.send(
      'response.function_call_arguments.done',
      `${where(open)},"name":${JSON.stringify(item.name)},"arguments":${JSON.stringify(item.arguments)}`,
    );
    await this.itemDone(open);
  }

  private async closeThink(): Promise<void> {
    if (!this.thinkOpen) return;
    this.thinkOpen = false;
    await this.appendText('</think>');
  }

  private itemDone(open: OpenItem): Promise<void> {
    return this.send(
      'response.output_item.done',
      `"output_index":${open.outputIndex},"item":${JSON.stringify(itemBody(open.item, 'completed'))}`,
    );
  }
}

function where(open: OpenItem): string {
  return `"item_id":"${open.item.id}","output_index":${open.outputIndex}`;
}
