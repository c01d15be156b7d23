import { describe, expect, it } from '@jest/globals';
import type { RunEventPart, ToolCall, Usage } from '@iop/wire';
import { dispatchRunParts, type RunPartHandlers } from './run-part-dispatch.js';

/** The parts as a run's stream, one part per turn of the event loop. */
async function* from(parts: RunEventPart[]): AsyncIterable<RunEventPart> {
  for (const part of parts) {
    await Promise.resolve();
    yield part;
  }
}

const usage = (promptTokens: number): Usage => ({
  promptTokens,
  completionTokens: 1,
  totalTokens: promptTokens + 1,
  reasoningTokens: 0,
  cachedTokens: 0,
  costUsd: 0,
});
const call: ToolCall = { id: 'c1', name: 'f', argumentsJson: '{}', index: 0 };

/** Handlers that record every call as one line. */
function recorder(toolStep?: 'stop'): { seen: string[]; handlers: RunPartHandlers } {
  const seen: string[] = [];
  const note = (line: string): Promise<void> => {
    seen.push(line);
    return Promise.resolve();
  };
  const handlers: RunPartHandlers = {
    text: (text) => note(`text ${text}`),
    reasoning: (text) => note(`reasoning ${text}`),
    toolCall: async (toolCall) => {
      await note(`tool ${toolCall.id}`);
      return toolStep;
    },
    complete: (finishReason, last) => note(`complete ${finishReason} ${last?.promptTokens}`),
    fail: (code, message, last) => note(`fail ${code} ${message} ${last?.promptTokens}`),
  };
  return { seen, handlers };
}

const open = { closed: false };

describe('dispatchRunParts', () => {
  it('skips empty deltas and unshown parts and completes with the last usage reported', async () => {
    const { seen, handlers } = recorder();
    await dispatchRunParts(
      from([
        { type: 'start', sessionId: 's', adapter: 'a', target: 't' },
        { type: 'text-delta', text: '' },
        { type: 'reasoning-delta', text: '' },
        { type: 'reasoning-delta', text: 'hm' },
        { type: 'usage', usage: usage(3) },
        { type: 'progress', kind: 'k', message: 'm', fields: {} },
        { type: 'text-delta', text: 'hi' },
        { type: 'tool-call', call },
        { type: 'usage', usage: usage(5) },
        { type: 'complete', detail: '', finishReason: 'stop', backendMs: 1 },
        { type: 'text-delta', text: 'after the end' },
      ]),
      open,
      handlers,
    );
    expect(seen).toEqual(['reasoning hm', 'text hi', 'tool c1', 'complete stop 5']);
  });

  it('fails an errored run with its code and a cancelled one as run_cancelled', async () => {
    const errored = recorder();
    await dispatchRunParts(
      from([
        { type: 'usage', usage: usage(2) },
        { type: 'error', code: 'backend_down', message: 'gone', retryable: false, backendMs: 1 },
      ]),
      open,
      errored.handlers,
    );
    expect(errored.seen).toEqual(['fail backend_down gone 2']);
    const cancelled = recorder();
    await dispatchRunParts(from([{ type: 'cancelled', reason: 'client left' }]), open, cancelled.handlers);
    expect(cancelled.seen).toEqual(['fail run_cancelled The run was cancelled: client left undefined']);
  });

  it('leaves out the reasoning and tool calls of an answer that has no handler for them', async () => {
    const { seen, handlers } = recorder();
    const { reasoning: _reasoning, toolCall: _toolCall, ...textOnly } = handlers;
    await dispatchRunParts(
      from([
        { type: 'reasoning-delta', text: 'hm' },
        { type: 'tool-call', call },
        { type: 'text-delta', text: 'hi' },
        { type: 'complete', detail: '', finishReason: 'length', backendMs: 1 },
      ]),
      open,
      textOnly,
    );
    expect(seen).toEqual(['text hi', 'complete length undefined']);
  });

  it("ends at a tool-call handler's 'stop' and once the client went away", async () => {
    const stopped = recorder('stop');
    await dispatchRunParts(
      from([
        { type: 'tool-call', call },
        { type: 'complete', detail: '', finishReason: 'stop', backendMs: 1 },
      ]),
      open,
      stopped.handlers,
    );
    expect(stopped.seen).toEqual(['tool c1']);
    const sink = { closed: false };
    const left = recorder();
    left.handlers.text = (text) => {
      left.seen.push(`text ${text}`);
      sink.closed = true;
      return Promise.resolve();
    };
    await dispatchRunParts(
      from([
        { type: 'text-delta', text: 'one' },
        { type: 'text-delta', text: 'two' },
        { type: 'complete', detail: '', finishReason: 'stop', backendMs: 1 },
      ]),
      sink,
      left.handlers,
    );
    expect(left.seen).toEqual(['text one']);
  });
});
