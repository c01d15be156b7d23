import { describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import { createRunSecrets } from '../governance/run-secrets.js';
import { createModelAccessGrant } from './model-access.js';

const config = (() => {
  const result = parseConfigText(
    `
nodes:
  - id: n1
    adapters:
      ollama: { base_url: "http://127.0.0.1:11434" }
      instances:
        - { name: agents, type: cli, fabric_model: local, profiles: { fab: { command: x }, plain: { command: x, fabric_model: '' } } }
    providers:
      - { id: o1, type: ollama, category: local_inference, adapter: ollama }
      - { id: a1, type: cli, category: cli, adapter: agents }
models:
  - { id: local, providers: { o1: "qwen" } }
  - { id: agent, providers: { a1: "fab" } }
`,
    'test.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
})();

describe('model access of a run', () => {
  const secrets = createRunSecrets();
  const grant = createModelAccessGrant(config.nodes, secrets);

  it('grants a fabric_model profile its model and a secret of this run', () => {
    const access = grant({ runId: 'run-7', nodeId: 'n1', adapter: 'agents', target: 'fab' });
    expect(access?.model).toBe('local');
    expect(secrets.verify('run-7', access?.apiKey ?? '')).toBe(true);
    // Also when an explicit route names the instance by its type.
    expect(grant({ runId: 'run-8', nodeId: 'n1', adapter: 'cli', target: 'fab' })?.model).toBe('local');
  });

  it('grants nothing to other profiles, adapters and nodes', () => {
    expect(grant({ runId: 'r', nodeId: 'n1', adapter: 'agents', target: 'plain' })).toBeUndefined();
    expect(grant({ runId: 'r', nodeId: 'n1', adapter: 'ollama', target: 'qwen' })).toBeUndefined();
    expect(grant({ runId: 'r', nodeId: 'n2', adapter: 'agents', target: 'fab' })).toBeUndefined();
  });
});
