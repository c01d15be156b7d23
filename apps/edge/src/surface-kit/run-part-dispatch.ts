// The run-part loop every streamed answer shares (chat completions, text completions, Responses, Anthropic
// Messages): stop writing once the client went away, skip empty deltas and the parts no answer shows (start,
// progress, embeddings), keep the last usage report, and end at the run's terminal part with its finish reason or
// its failure (a cancelled run fails as `run_cancelled`). Each surface's stream keeps its own wire format in the
// handlers it passes.
import type { RunEventPart, ToolCall, Usage } from '@iop/wire';
import type { SseSink } from './sse-sink.js';

export interface RunPartHandlers {
  /** A non-empty text delta. */
  text(text: string): Promise<void>;
  /** A non-empty reasoning delta; left out: reasoning is not part of this answer. */
  reasoning?(text: string): Promise<void>;
  /**
   * A tool call (or more of its arguments); left out: this answer has no tool calls. 'stop' ends the stream at
   * once (the handler wrote what ends it).
   */
  toolCall?(call: ToolCall): Promise<'stop' | void>;
  /** The run completed; `usage` is the last usage the run reported, if any. */
  complete(finishReason: string, usage: Usage | undefined): Promise<void>;
  /** The run failed or was cancelled (code `run_cancelled`). */
  fail(code: string, message: string, usage: Usage | undefined): Promise<void>;
}

/** Feeds a run's parts to `handlers` until its terminal part, or until the sink's client went away. */
export async function dispatchRunParts(
  parts: AsyncIterable<RunEventPart>,
  sink: Pick<SseSink, 'closed'>,
  handlers: RunPartHandlers,
): Promise<void> {
  let usage: Usage | undefined;
  for await (const part of parts) {
    if (sink.closed) return;
    switch (part.type) {
      case 'text-delta':
        if (part.text !== '') await handlers.text(part.text);
        break;
      case 'reasoning-delta':
        if (part.text !== '' && handlers.reasoning) await handlers.reasoning(part.text);
        break;
      case 'tool-call':
        if (handlers.toolCall && (await handlers.toolCall(part.call)) === 'stop') return;
        break;
      case 'usage':
        usage = part.usage;
        break;
      case 'start':
      case 'progress':
      case 'embeddings':
        break;
      case 'complete':
        await handlers.complete(part.finishReason, usage);
        return;
      case 'error':
        await handlers.fail(part.code, part.message, usage);
        return;
      case 'cancelled':
        await handlers.fail('run_cancelled', `The run was cancelled: ${part.reason}`, usage);
        return;
      default: {
        const unreachable: never = part;
        throw new Error(`unknown run part ${JSON.stringify(unreachable)}`);
      }
    }
  }
}
