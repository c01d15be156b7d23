// The CLI profiles `node adopt` gives each coding-agent CLI a node discovered: the same profiles as the shipped
// configs/edge.yaml (`agents` instance), so an adopted CLI runs exactly as the documented example. A test keeps
// the two equal. Keyed by the executable name discovery reports; `profile` is the profile (and model) name.
export interface ShippedCliProfile {
  readonly profile: string;
  readonly settings: Readonly<Record<string, unknown>>;
}

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
  },
  opencode: {
    profile: 'opencode',
    settings: {
      command: 'opencode',
      args: ['serve', '--hostname', '127.0.0.1', '--port', '0'],
      mode: 'opencode-sse',
      env: { OPENCODE_DISABLE_SHARE: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' },
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
