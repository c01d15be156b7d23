import { describe, expect, it } from '@jest/globals';
import { appendNodeEntries, renderNodeEntries, type NodeEntries } from './append-node-entries.js';
import { parseConfigText } from './load-config.js';

const ENTRIES: NodeEntries = {
  nodeId: 'gpu-box',
  instances: [
    {
      value: { name: 'ollama', type: 'ollama', base_url: 'http://127.0.0.1:11434' },
      comment: 'discovered: ollama 0.12.6',
    },
  ],
  providers: [
    {
      value: {
        id: 'gpu-box-ollama',
        type: 'ollama',
        category: 'local_inference',
        adapter: 'ollama',
        models: ['qwen3:8b'],
        capacity: 1,
      },
      comment: 'capacity 1: one GPU',
    },
  ],
  models: [{ value: { id: 'qwen3:8b', providers: { 'gpu-box-ollama': 'qwen3:8b' } }, comment: '' }],
};

const OPERATOR_FILE = `# my edge
edge:
  id: e1 # keep me

models: [] # none yet

nodes:
  # the GPU box in the closet
  - id: gpu-box
    runtime: { max_concurrency: 2 }
  - id: other
`;

describe('appendNodeEntries', () => {
  it('appends to the existing node entry and keeps every comment and the layout of the rest', () => {
    const next = appendNodeEntries(OPERATOR_FILE, ENTRIES);
    for (const kept of [
      '# my edge',
      'id: e1 # keep me',
      '# the GPU box in the closet',
      'runtime: { max_concurrency: 2 }',
    ]) {
      expect(next).toContain(kept);
    }
    expect(next).toContain('# discovered: ollama 0.12.6');
    expect(next).toContain('# capacity 1: one GPU');
    const parsed = parseConfigText(next, 'edge.yaml');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    const node = parsed.config.nodes.find((entry) => entry.id === 'gpu-box');
    expect(node?.runtime.max_concurrency).toBe(2);
    expect(node?.adapters.instances.map((instance) => instance.name)).toEqual(['ollama']);
    expect(node?.providers.map((provider) => [provider.id, provider.capacity])).toEqual([
      ['gpu-box-ollama', 1],
    ]);
    expect(parsed.config.models.map((model) => [model.id, model.providers])).toEqual([
      ['qwen3:8b', { 'gpu-box-ollama': 'qwen3:8b' }],
    ]);
    expect(parsed.config.nodes.map((entry) => entry.id)).toEqual(['gpu-box', 'other']);
  });

  it('adds the node entry when the node is not configured yet (registered in the node store only)', () => {
    const next = appendNodeEntries('edge: { id: e1 }\n', ENTRIES);
    const parsed = parseConfigText(next, 'edge.yaml');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    expect(parsed.config.nodes.map((node) => [node.id, node.providers.length])).toEqual([['gpu-box', 1]]);
  });

  it('renders the entries alone for a dry run', () => {
    const rendered = renderNodeEntries(ENTRIES);
    expect(rendered).toContain('nodes:\n  - id: gpu-box\n    adapters:\n      instances:\n');
    expect(rendered).toContain('# capacity 1: one GPU');
    expect(rendered).toContain('models:\n  - id: qwen3:8b\n');
  });

  it('refuses a document whose nodes or adapters are not what they should be', () => {
    expect(() => appendNodeEntries('nodes: 5\n', ENTRIES)).toThrow('nodes is not a list');
    expect(() => appendNodeEntries('nodes:\n  - id: gpu-box\n    adapters: []\n', ENTRIES)).toThrow(
      'nodes[gpu-box].adapters is not a mapping',
    );
    expect(() => appendNodeEntries('- a\n', ENTRIES)).toThrow('the document is not a mapping');
    expect(() => appendNodeEntries('a: [\n', ENTRIES)).toThrow('not valid YAML');
  });
});
