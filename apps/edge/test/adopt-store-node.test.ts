// `node adopt` of a node registered only in the node store (`iop-edge node register`, no nodes[] entry): adding
// its entry — no token or alias of its own — with an instance, a provider and a model applies live. The edge
// pushes the connected node its first real payload, and a request for the new model runs on it.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { NODE_STORE_FILE } from '../src/node/node-store.js';
import {
  configDocument,
  NODE_TOKEN,
  startRefreshHarness,
  type ConfigSpec,
  type RefreshHarness,
} from './refresh-harness.js';

let harness: RefreshHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('adopting a store-registered node', () => {
  it('adds its nodes[] entry with an instance, a provider and a model live, and routes to it', async () => {
    let spec!: ConfigSpec;
    harness = await startRefreshHarness((dataDir) => {
      // What `iop-edge node register walk-in` leaves: the token's digest in the node store, nothing in edge.yaml.
      mkdirSync(dataDir, { recursive: true });
      const now = new Date().toISOString();
      writeFileSync(
        path.join(dataDir, NODE_STORE_FILE),
        JSON.stringify({
          version: 1,
          nodes: [
            {
              node_id: 'walk-in',
              token_sha256: createHash('sha256').update(NODE_TOKEN).digest('hex'),
              created_at: now,
              rotated_at: now,
            },
          ],
        }),
        { mode: 0o600 },
      );
      spec = {
        dataDir,
        nodes: [{ id: 'n1', providers: [{ id: 'p1', served: 'served-p1' }] }],
        models: [{ id: 'm', providers: { p1: 'served-p1' } }],
      };
      return spec;
    });
    const h = harness;
    const walkIn = await h.connect('walk-in');
    expect(walkIn.refreshes).toEqual([]);

    const document = configDocument(spec) as { nodes: unknown[]; models: unknown[] };
    document.nodes.push({
      id: 'walk-in',
      adapters: {
        instances: [
          { name: 'vllm', type: 'openai_compat', provider: 'vllm', base_url: 'http://127.0.0.1:9/v1' },
        ],
      },
      providers: [
        {
          id: 'walk-in-vllm',
          type: 'vllm',
          category: 'local_inference',
          adapter: 'vllm',
          models: ['qwen'],
          capacity: 4,
        },
      ],
    });
    document.models.push({ id: 'qwen', providers: { 'walk-in-vllm': 'qwen' } });
    const result = await h.refresh('apply', JSON.stringify(document, null, 2));
    expect(result.status).toBe('applied');
    expect(result.reports.map((report) => `${report.class} ${report.change} ${report.path}`)).toEqual([
      'live added models[qwen]',
      'live added nodes[walk-in]',
      'live added nodes[walk-in].providers[walk-in-vllm]',
    ]);
    expect(result.node_results).toEqual([{ node_id: 'walk-in', status: 'applied', error: '' }]);
    expect(walkIn.refreshes.at(-1)?.adapters.map((adapter) => adapter.name)).toEqual(['vllm']);
    expect(walkIn.refreshes.at(-1)?.providers.map((provider) => provider.id)).toEqual(['walk-in-vllm']);

    const answer = h.chat('qwen');
    await walkIn.waitForRuns(1);
    expect(walkIn.runs[0]?.request).toMatchObject({
      adapter: 'vllm',
      target: 'qwen',
      providerId: 'walk-in-vllm',
    });
    await walkIn.finish(walkIn.openRuns()[0]);
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.headers.get('x-iop-provider')).toBe('walk-in-vllm');
  });
});
