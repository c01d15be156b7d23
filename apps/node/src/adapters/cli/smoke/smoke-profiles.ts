// Profiles of the real CLIs for the e2e smoke (scripts/e2e-smoke.sh): each points one CLI at the agent model
// server with an isolated HOME, the same way the documented profiles in agent-test/cli-profiles.md do for real use.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { CliProfile } from '@iop/wire';

export const SMOKE_PROFILES = ['opencode', 'codex', 'claude', 'cline'] as const;
export type SmokeProfileName = (typeof SMOKE_PROFILES)[number];

export interface SmokeSetup {
  profile: Partial<CliProfile>;
  /** Whether a later run of the IOP session continues the CLI's conversation. */
  carriesHistory: boolean;
  historyNote: string;
}

export async function createSmokeProfile(
  name: SmokeProfileName,
  context: { clisDir: string; modelUrl: string; home: string },
): Promise<SmokeSetup> {
  const bin = (command: string) => path.join(context.clisDir, 'node_modules/.bin', command);
  mkdirSync(context.home, { recursive: true });
  switch (name) {
    case 'opencode': {
      const home = context.home;
      return {
        carriesHistory: true,
        historyNote: '',
        profile: {
          command: bin('opencode'),
          mode: 'opencode-sse',
          args: ['--model', 'fake/fake-model', '--title', 'iop-e2e', '--dangerously-skip-permissions'],
          env: {
            HOME: home,
            XDG_CONFIG_HOME: path.join(home, '.config'),
            XDG_DATA_HOME: path.join(home, '.local/share'),
            XDG_CACHE_HOME: path.join(home, '.cache'),
            XDG_STATE_HOME: path.join(home, '.local/state'),
            OPENCODE_DISABLE_AUTOUPDATE: '1',
            OPENCODE_DISABLE_MODELS_FETCH: '1',
            OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
            OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
            OPENCODE_DISABLE_SHARE: '1',
            OPENCODE_CONFIG_CONTENT: JSON.stringify({
              autoupdate: false,
              share: 'disabled',
              model: 'fake/fake-model',
              small_model: 'fake/fake-model',
              enabled_providers: ['fake'],
              permission: { bash: 'allow', edit: 'allow' },
              provider: {
                fake: {
                  npm: '@ai-sdk/openai-compatible',
                  name: 'Fake local',
                  options: { baseURL: `${context.modelUrl}/v1`, apiKey: 'dummy' },
                  models: {
                    'fake-model': {
                      name: 'Fake Model',
                      tool_call: true,
                      limit: { context: 128000, output: 4096 },
                    },
                  },
                },
              },
            }),
          },
          requestTimeoutMs: 180_000,
        },
      };
    }
    case 'codex': {
      const codexHome = path.join(context.home, 'codex-home');
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(
        path.join(codexHome, 'config.toml'),
        `model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "Fake local"\nbase_url = "${context.modelUrl}/v1"\nenv_key = "FAKE_API_KEY"\nwire_api = "responses"\n`,
      );
      const common = [
        'exec',
        '--json',
        '--skip-git-repo-check',
        '--dangerously-bypass-approvals-and-sandbox',
      ];
      return {
        carriesHistory: true,
        historyNote: '',
        profile: {
          command: bin('codex'),
          mode: 'oneshot',
          outputFormat: 'codex-json',
          args: [...common, '{prompt}'],
          resumeArgs: [...common, 'resume', '{thread_id}', '{prompt}'],
          env: { HOME: context.home, CODEX_HOME: codexHome, FAKE_API_KEY: 'dummy' },
          requestTimeoutMs: 180_000,
        },
      };
    }
    case 'claude': {
      const common = ['-p', '--output-format', 'stream-json', '--verbose', '--allowedTools', 'Bash'];
      return {
        carriesHistory: true,
        historyNote: '',
        profile: {
          command: bin('claude'),
          mode: 'oneshot',
          outputFormat: 'claude-stream-json',
          args: [...common, '--session-id', '{session_id}'],
          resumeArgs: [...common, '--resume', '{session_id}'],
          env: {
            HOME: context.home,
            ANTHROPIC_BASE_URL: context.modelUrl,
            ANTHROPIC_API_KEY: 'sk-ant-dummy',
            ANTHROPIC_MODEL: 'fake-model',
            ANTHROPIC_DEFAULT_HAIKU_MODEL: 'fake-model',
            ANTHROPIC_SMALL_FAST_MODEL: 'fake-model',
            CLAUDE_CONFIG_DIR: path.join(context.home, '.claude'),
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            DISABLE_AUTOUPDATER: '1',
            DISABLE_TELEMETRY: '1',
            DISABLE_ERROR_REPORTING: '1',
          },
          requestTimeoutMs: 180_000,
          resultGraceMs: 3000,
        },
      };
    }
    case 'cline': {
      const dataDir = path.join(context.home, 'cline-data');
      await promisify(execFile)(
        bin('cline'),
        [
          'auth',
          '-p',
          'openai-compatible',
          '-k',
          'dummy',
          '-m',
          'fake-model',
          '-b',
          `${context.modelUrl}/v1`,
          '--data-dir',
          dataDir,
        ],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: context.home }, timeout: 60_000 },
      );
      return {
        carriesHistory: false,
        historyNote:
          'cline --json cannot resume a task (--id is refused with --json), so each run starts fresh',
        profile: {
          command: bin('cline'),
          mode: 'oneshot',
          outputFormat: 'cline-json',
          args: ['-y', '--json', '--data-dir', dataDir, '{prompt}'],
          env: { HOME: context.home },
          requestTimeoutMs: 180_000,
        },
      };
    }
    default: {
      const unreachable: never = name;
      throw new Error(`unknown profile ${String(unreachable)}`);
    }
  }
}
