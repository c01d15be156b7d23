// The durable record of long-running work is off the hot path: plain chat completions and responses (streamed or
// not) never write to the run record store; only background responses do, and once per status change. Stored
// conversations likewise: a chat completion or a `store: false` response never writes one; a stored response
// writes once when it ends, however many tokens it streamed.
import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../clock.js';
import { silentLogger } from '../logging.js';
import { RunRegistry } from '../service/run-registry.js';
import { MemoryRunRecordStore } from '../service/test-support/memory-run-record-store.js';
import { textRun } from '../test-support/fake-edge-service.js';
import { MemoryResponseStore } from './memory-response-store.js';
import { createOpenAIApp } from './openai-app.js';
import { serveHarnessApp } from './test-support/openai-harness.js';
import { eventually, harnessFabric } from '../surface-kit/test-support/surface-harness.js';
import OpenAI from 'openai';

describe('run record store on the hot path', () => {
  it('is written only by background responses; conversations only by stored responses, once each', async () => {
    const { config, pool, service } = harnessFabric({
      scripter: () => ({ parts: textRun(['to', 'ken', 's', '!']) }),
    });
    const store = new MemoryRunRecordStore();
    service.runRegistry = new RunRegistry({ clock: systemClock, store, origin: { edgeId: 'e', boot: 'b' } });
    const conversations = new MemoryResponseStore({ ttlMs: 60_000, maxPerKey: 10, clock: systemClock });
    const app = createOpenAIApp({ config, service, logger: silentLogger, responseStore: conversations });
    const served = await serveHarnessApp(app, pool);
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'k', maxRetries: 0 });
    try {
      await client.chat.completions.create({ model: 'pooled', messages: [{ role: 'user', content: 'hi' }] });
      const stream = await client.chat.completions.create({
        model: 'pooled',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      for await (const chunk of stream) void chunk;
      await client.responses.create({ model: 'pooled', input: 'hi', store: false });
      const unstored = client.responses.stream({ model: 'pooled', input: 'hi', store: false });
      await unstored.finalResponse();
      expect(service.submitted).toHaveLength(4);
      expect(store.writes).toBe(0);
      expect(conversations.writes).toBe(0);

      // Stored (the default): one write per response when it ends, streamed or not.
      await client.responses.create({ model: 'pooled', input: 'keep' });
      await client.responses.stream({ model: 'pooled', input: 'keep' }).finalResponse();
      expect(conversations.writes).toBe(2);
      expect(store.writes).toBe(0);

      const queued = await client.responses.create({
        model: 'pooled',
        input: 'work',
        background: true,
        store: false,
      });
      await eventually(async () => {
        expect((await client.responses.retrieve(queued.id)).status).toBe('completed');
      });
      // queued (add), in_progress (update), completed (end): three writes however many tokens streamed.
      expect(store.writes).toBe(3);
      expect(conversations.writes).toBe(2);
    } finally {
      await served.close();
    }
  });
});
