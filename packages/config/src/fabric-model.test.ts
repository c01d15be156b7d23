import { describe, expect, it } from '@jest/globals';
import { formatIssue } from './format-issue.js';
import { parseConfigText } from './load-config.js';
import { classifyRefresh } from './classify-refresh.js';
import type { CliAdapterInstanceConfig, EdgeConfig } from './types.js';

function load(text: string): EdgeConfig {
  const result = parseConfigText(text, 'test.yaml');
  if (!result.ok)
    throw new Error(`expected a valid config, got:\n${result.issues.map(formatIssue).join('\n')}`);
  return result.config;
}

function problems(text: string): string[] {
  const result = parseConfigText(text, 'test.yaml');
  if (result.ok) throw new Error('expected the config to be rejected');
  return result.issues.map((issue) => `${issue.path}: ${issue.message}`);
}

/** One node with an Ollama provider (model `local`) and a CLI provider (model `agent`); `cli` is the cli block. */
function configWith(cli: string, extraModels = ''): string {
  return `
nodes:
  - id: n1
    adapters:
      ollama: { base_url: "http://127.0.0.1:11434" }
      cli: ${cli}
    providers:
      - { id: ollama-1, type: ollama, category: local_inference, adapter: ollama }
      - { id: agents, type: cli, category: cli, adapter: cli }
models:
  - { id: local, providers: { ollama-1: "qwen" } }
  - { id: agent, providers: { agents: "coder" } }
${extraModels}`;
}

function cliOf(config: EdgeConfig): CliAdapterInstanceConfig {
  const instance = config.nodes[0]?.adapters.instances.find((entry) => entry.type === 'cli');
  if (instance?.type !== 'cli') throw new Error('no cli instance');
  return instance;
}

describe('fabric_model', () => {
  it('is empty by default and taken from the profile or, failing that, the instance', () => {
    const config = load(
      configWith(
        '{ fabric_model: local, profiles: { coder: { command: x }, own: { command: x, fabric_model: local2 } } }',
        '  - { id: local2, providers: { ollama-1: "llama" } }',
      ),
    );
    const cli = cliOf(config);
    expect(cli.fabric_model).toBe('local');
    expect(cli.profiles['coder']?.fabric_model).toBe('local');
    expect(cli.profiles['own']?.fabric_model).toBe('local2');
    expect(
      cliOf(load(configWith('{ profiles: { coder: { command: x } } }'))).profiles['coder']?.fabric_model,
    ).toBe('');
  });

  it('must name a models[] id', () => {
    expect(problems(configWith('{ profiles: { coder: { command: x, fabric_model: nope } } }'))).toEqual([
      "nodes[0].adapters.cli.profiles.coder.fabric_model: fabric_model 'nope' is not a models[] id",
    ]);
  });

  it('refuses a model served by CLI providers, saying why', () => {
    const found = problems(configWith('{ profiles: { coder: { command: x, fabric_model: agent } } }'));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('nodes[0].adapters.cli.profiles.coder.fabric_model');
    expect(found[0]).toContain('served by CLI providers (agents)');
    expect(found[0]).toContain('never wait on agent capacity');
  });

  it('names the instance default when an inherited fabric_model is wrong', () => {
    const found = problems(configWith('{ fabric_model: agent, profiles: { coder: { command: x } } }'));
    expect(found[0]).toContain('(from nodes[0].adapters.cli.fabric_model)');
  });

  it('is refused for persistent modes (the process outlives the run holding the secret)', () => {
    const found = problems(
      configWith('{ profiles: { coder: { command: x, mode: persistent, fabric_model: local } } }'),
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toContain("mode 'persistent'");
    expect(
      problems(
        configWith('{ profiles: { coder: { command: x, mode: opencode-sse, fabric_model: local } } }'),
      ),
    ).toHaveLength(1);
  });

  it('a change is classified like the other profile execution fields (restart)', () => {
    const current = load(configWith('{ profiles: { coder: { command: x } } }'));
    const candidate = parseConfigText(
      configWith('{ profiles: { coder: { command: x, fabric_model: local } } }'),
      'test.yaml',
    );
    const classification = classifyRefresh(current, candidate, 'dry-run');
    const report = classification.reports.find((entry) => entry.path.includes('fabric_model'));
    expect(report?.class).toBe('restart');
    expect(report?.reason).toContain("'fabric_model'");
  });
});
