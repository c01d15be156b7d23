// Reassembles streamed OpenAI tool-call deltas. The first delta of a call carries its `index`, `id` and
// `function.name`; later deltas with the same index append `function.arguments` text. Calls are complete when
// the choice finishes, and come out in index order.
import { create, type ToolCall } from '@iop/wire';

export interface ToolCallDelta {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
}

export class ToolCallAssembler {
  private readonly calls = new Map<number, PendingCall>();

  get size(): number {
    return this.calls.size;
  }

  add(delta: ToolCallDelta): void {
    // Servers that send whole calls without an index still number them in arrival order.
    const index = typeof delta.index === 'number' ? delta.index : this.calls.size;
    let call = this.calls.get(index);
    if (!call) {
      call = { id: '', name: '', arguments: '' };
      this.calls.set(index, call);
    }
    if (typeof delta.id === 'string' && delta.id !== '') call.id = delta.id;
    if (typeof delta.function?.name === 'string' && delta.function.name !== '')
      call.name += delta.function.name;
    if (typeof delta.function?.arguments === 'string') call.arguments += delta.function.arguments;
  }

  /** The complete calls in index order (ids invented from `fallbackId` where the server sent none); clears. */
  drain(fallbackId: (index: number) => string): ToolCall[] {
    const ordered = [...this.calls.entries()].sort(([a], [b]) => a - b);
    this.calls.clear();
    return ordered.map(([index, call]) =>
      create.toolCall({
        id: call.id || fallbackId(index),
        name: call.name,
        argumentsJson: call.arguments === '' ? '{}' : call.arguments,
        index,
      }),
    );
  }
}
