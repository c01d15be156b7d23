// The text a run reads, as chat messages, for the token estimates (the reservation at admission and the
// delivered-usage estimate): a chat's messages, a completion's prompt and suffix, an embedding's inputs.
import { create, RunKind, type ChatMessage } from '@iop/wire';
import type { RunSpec } from '../placement/run-types.js';

/** The token estimate of a run's input (the governor's pre-admission check) reads its text as messages. */
export function estimationMessages(spec: RunSpec): readonly ChatMessage[] {
  switch (spec.kind ?? RunKind.RUN_KIND_CHAT) {
    case RunKind.RUN_KIND_COMPLETION:
      return [
        create.chatMessage({ content: `${spec.completion?.prompt ?? ''}${spec.completion?.suffix ?? ''}` }),
      ];
    case RunKind.RUN_KIND_EMBEDDING:
      return (spec.embedding?.inputs ?? []).map((content) => create.chatMessage({ content }));
    case RunKind.RUN_KIND_CHAT:
    case RunKind.UNRECOGNIZED:
      return spec.messages;
  }
}
