// What a run cost, as far as the edge saw it. The backend's usage (each usage part is the run's total so far) when
// one came; otherwise, because a stream cut by the client, a cancel or a deadline usually ends before the backend
// reports anything, an estimate from what was streamed: the text, reasoning and tool-call arguments that reached
// the edge (and so, in a stream, the client) plus the prompt the backend read to produce them. A run that streamed
// nothing and reported nothing cost nothing. Budgets and `tpm` settle against this figure.
import type { ChatMessage, RunEventPart, Usage } from '@iop/wire';
import { estimateTextTokens, estimateTokens } from '../governance/estimate-tokens.js';
import type { RunUsage } from '../governance/governor.js';

export class DeliveredUsage {
  private reported: Usage | undefined;
  private streamedCharacters = 0;
  private streamedAnything = false;

  constructor(private readonly prompt: readonly ChatMessage[]) {}

  /** Counts one of the run's parts (call for every part, in order). */
  observe(part: RunEventPart): void {
    switch (part.type) {
      case 'usage':
        this.reported = part.usage;
        return;
      case 'text-delta':
      case 'reasoning-delta':
        this.streamedCharacters += part.text.length;
        this.streamedAnything = true;
        return;
      case 'tool-call':
        this.streamedCharacters += part.call.name.length + part.call.argumentsJson.length;
        this.streamedAnything = true;
        return;
      case 'start':
      case 'progress':
      case 'embeddings':
      case 'complete':
      case 'error':
      case 'cancelled':
        return;
      default: {
        const unreachable: never = part;
        throw new Error(`unknown run event part ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** True when the backend reported the figures (usage() is then exactly what it said). */
  get fromBackend(): boolean {
    return this.reported !== undefined;
  }

  usage(): RunUsage {
    if (this.reported) {
      return { inputTokens: this.reported.promptTokens, outputTokens: this.reported.completionTokens };
    }
    if (!this.streamedAnything) return { inputTokens: 0, outputTokens: 0 };
    return {
      inputTokens: estimateTokens(this.prompt),
      outputTokens: estimateTextTokens(this.streamedCharacters),
    };
  }
}
