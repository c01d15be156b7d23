import { describe, expect, it } from '@jest/globals';
import { capacityWarnings } from './capacity-warnings.js';
import { parseConfigText } from './load-config.js';

function config(maxConcurrency: number, capacities: number[]) {
  const providers = capacities
    .map(
      (capacity, index) =>
        `      - { id: p${index}, type: vllm, category: api, adapter: openai_compat, models: [m], capacity: ${capacity} }`,
    )
    .join('\n');
  const result = parseConfigText(
    `
nodes:
  - id: gpu-01
    runtime: { max_concurrency: ${maxConcurrency} }
    adapters:
      openai_compat: { enabled: true, provider: vllm, base_url: 'http://127.0.0.1:8000' }
    providers:
${providers}
`,
    'edge.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

describe('capacityWarnings', () => {
  it('warns when provider capacities add up beyond max_concurrency and says the node limit wins', () => {
    const [warning, ...rest] = capacityWarnings(config(4, [4, 4]));
    expect(rest).toEqual([]);
    expect(warning).toContain('nodes[0] (gpu-01): enabled provider capacities add up to 8 (p0=4, p1=4)');
    expect(warning).toContain('runtime.max_concurrency is 4; the node limit wins');
  });

  it('says nothing when the capacities fit', () => {
    expect(capacityWarnings(config(4, [2, 2]))).toEqual([]);
    expect(capacityWarnings(config(1, [1]))).toEqual([]);
  });
});
