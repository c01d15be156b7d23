// The CLI profiles `node adopt` gives each coding-agent CLI a node discovered: the same profiles as the shipped
// configs/edge.yaml (`agents` instance), so an adopted CLI runs exactly as the documented example. A test keeps
// the two equal. Keyed by the executable name discovery reports; `profile` is the profile (and model) name.
//
// `fabric` (issue 42, agents on the fabric): the same CLI pointed at the pool instead of its own provider, for a
// profile or instance with `fabric_model` — the run's node-loopback model endpoint and secret go in through the
// `{model_base_url}` / `{anthropic_base_url}` / `{model_api_key}` / `{model}` placeholders (agent-test/cli-profiles.md).
// One-shot modes only (config refuses `fabric_model` on a persistent mode), so opencode runs `opencode run` here.
export interface ShippedCliProfile {
  readonly profile: string;
  readonly settings: Readonly<Record<string, unknown>>;
  /** The profile (name and settings) of this CLI calling the pool through its run's model endpoint. */
  readonly fabric?: { readonly profile: string; readonly settings: Readonly<Record<string, unknown>> };
}

/** cline keeps its provider in its data dir: a fresh one per run, authenticated with the run's endpoint and key. */
const CLINE_FABRIC_SCRIPT =
  'dir=$(mktemp -d) && trap \'rm -rf "$dir"\' EXIT && ' +
  'cline auth -p openai-compatible -k "$IOP_MODEL_API_KEY" -m "$IOP_MODEL" -b "$IOP_MODEL_BASE_URL" --data-dir "$dir" >/dev/null && ' +
  'cline -y --json --data-dir "$dir" -- "$2"';

/**
 * codex's provider for the run's endpoint (Responses API; the key from env IOP_MODEL_API_KEY). Its hosted tools
 * (`web_search`, the `multi_agent_v1` namespace) are turned off: the edge runs function tools only and refuses a
 * request carrying others (checked with codex 0.171, `make test-e2e IOP_E2E_PROFILE=codex-fabric`).
 */
const CODEX_FABRIC_OPTIONS = [
  '-c',
  'model_provider=iop',
  '-c',
  'model_providers.iop={name="IOP fabric",base_url="{model_base_url}",env_key="IOP_MODEL_API_KEY",wire_api="responses"}',
  '-c',
  'model="{model}"',
  '-c',
  'web_search="disabled"',
  '-c',
  'features.multi_agent=false',
];

/** opencode's provider for the run's endpoint (OPENCODE_CONFIG_CONTENT), the placeholders filled per run. */
const OPENCODE_FABRIC_CONFIG = JSON.stringify({
  autoupdate: false,
  share: 'disabled',
  model: 'iop/{model}',
  small_model: 'iop/{model}',
  enabled_providers: ['iop'],
  provider: {
    iop: {
      npm: '@ai-sdk/openai-compatible',
      name: 'IOP fabric',
      options: { baseURL: '{model_base_url}', apiKey: '{model_api_key}' },
      models: { '{model}': { name: '{model}', tool_call: true } },
    },
  },
});

export const SHIPPED_CLI_PROFILES: Readonly<Record<string, ShippedCliProfile>> = {
  claude: {
    profile: 'claude',
    settings: {
      command: 'claude',
      args: ['-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'],
      mode: 'oneshot',
      output_format: 'claude-stream-json',
      resume_args: ['--resume', '{session_id}'],
      request_timeout_ms: 600000,
      result_grace_ms: 3000,
    },
    fabric: {
      profile: 'claude-fabric',
      settings: {
        command: 'claude',
        args: ['-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'],
        mode: 'oneshot',
        output_format: 'claude-stream-json',
        resume_args: ['--resume', '{session_id}'],
        env: {
          ANTHROPIC_BASE_URL: '{anthropic_base_url}',
          ANTHROPIC_AUTH_TOKEN: '{model_api_key}',
          ANTHROPIC_MODEL: '{model}',
          ANTHROPIC_DEFAULT_HAIKU_MODEL: '{model}',
          ANTHROPIC_SMALL_FAST_MODEL: '{model}',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
        request_timeout_ms: 600000,
        result_grace_ms: 3000,
      },
    },
  },
  codex: {
    profile: 'codex',
    settings: {
      command: 'codex',
      args: [
        'exec',
        '--json',
        '--skip-git-repo-check',
        '--dangerously-bypass-approvals-and-sandbox',
        '--',
        '{prompt}',
      ],
      mode: 'oneshot',
      output_format: 'codex-json',
      resume_args: [
        'exec',
        '--json',
        '--skip-git-repo-check',
        '--dangerously-bypass-approvals-and-sandbox',
        'resume',
        '{thread_id}',
        '--',
        '{prompt}',
      ],
    },
    fabric: {
      profile: 'codex-fabric',
      settings: {
        command: 'codex',
        args: [
          ...CODEX_FABRIC_OPTIONS,
          'exec',
          '--json',
          '--skip-git-repo-check',
          '--dangerously-bypass-approvals-and-sandbox',
          '--',
          '{prompt}',
        ],
        mode: 'oneshot',
        output_format: 'codex-json',
        resume_args: [
          ...CODEX_FABRIC_OPTIONS,
          'exec',
          '--json',
          '--skip-git-repo-check',
          '--dangerously-bypass-approvals-and-sandbox',
          'resume',
          '{thread_id}',
          '--',
          '{prompt}',
        ],
        env: { IOP_MODEL_API_KEY: '{model_api_key}' },
      },
    },
  },
  opencode: {
    profile: 'opencode',
    settings: {
      command: 'opencode',
      args: ['serve', '--hostname', '127.0.0.1', '--port', '0'],
      mode: 'opencode-sse',
      env: { OPENCODE_DISABLE_SHARE: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' },
    },
    fabric: {
      profile: 'opencode-fabric',
      settings: {
        command: 'opencode',
        args: ['run', '--format', 'json'],
        mode: 'oneshot',
        output_format: 'opencode-json',
        resume_args: ['run', '--format', 'json', '--session', '{session_id}'],
        env: {
          OPENCODE_CONFIG_CONTENT: OPENCODE_FABRIC_CONFIG,
          OPENCODE_DISABLE_SHARE: '1',
          OPENCODE_DISABLE_AUTOUPDATE: '1',
          OPENCODE_DISABLE_MODELS_FETCH: '1',
        },
      },
    },
  },
  cline: {
    profile: 'cline',
    settings: {
      command: 'cline',
      args: ['-y', '--json', '--data-dir', '/var/lib/iop/cline', '--', '{prompt}'],
      mode: 'oneshot',
      output_format: 'cline-json',
      request_timeout_ms: 900000,
    },
    fabric: {
      profile: 'cline-fabric',
      settings: {
        command: 'sh',
        args: ['-c', CLINE_FABRIC_SCRIPT, 'cline', '--', '{prompt}'],
        mode: 'oneshot',
        output_format: 'cline-json',
        env: {
          IOP_MODEL_BASE_URL: '{model_base_url}',
          IOP_MODEL_API_KEY: '{model_api_key}',
          IOP_MODEL: '{model}',
        },
        request_timeout_ms: 900000,
      },
    },
  },
  agy: {
    profile: 'antigravity',
    settings: {
      command: 'agy',
      args: ['--dangerously-skip-permissions', '--print', '--', '{prompt}'],
      mode: 'antigravity-print',
      resume_args: [
        '--dangerously-skip-permissions',
        '--conversation',
        '{thread_id}',
        '--print',
        '--',
        '{prompt}',
      ],
    },
  },
};
