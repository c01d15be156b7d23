// How the dashboard starts a playground prompt: through the same admission as an OpenAI request for the model
// (surface 'ui'): the service queues, places, runs and releases; a client that goes away cancels the run.
import { create, isTerminalPart, type RunEventPart } from '@iop/wire';
import type { EdgeService } from '../service/types.js';
import type { PlaygroundStarter } from './playground-route.js';

export function playgroundStarter(service: Pick<EdgeService, 'submitRun'>): PlaygroundStarter {
  return async (request, signal) => {
    const run = await service.submitRun(
      { kind: 'model', model: request.model },
      {
        session: { kind: 'slot', baseId: 'ui-playground' },
        messages: [create.chatMessage({ role: 'user', content: request.prompt })],
        params: request.maxTokens ? create.generationParams({ maxTokens: request.maxTokens }) : undefined,
        metadata: { surface: 'ui' },
      },
      { surface: 'ui', signal },
    );
    let settled = false;
    void run.done.then(() => (settled = true));
    return {
      runId: run.runId,
      providerId: run.providerId ?? '',
      nodeId: run.nodeId,
      queueMs: run.queueMs,
      parts: (async function* (): AsyncIterable<RunEventPart> {
        for await (const event of run.events) {
          yield event.part;
          if (isTerminalPart(event.part)) return;
        }
      })(),
      finish(reason) {
        if (!settled) void run.cancel(reason).catch(() => undefined);
      },
    };
  };
}
