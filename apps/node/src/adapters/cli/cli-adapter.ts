// The `cli` adapter: runs coding-agent CLIs as IOP targets. Each profile (target) is data from the edge config;
// each (target, session id) is a logical session of one of three kinds — a persistent process, one-shot runs
// with remembered conversation ids, or an opencode server — kept in a SessionRegistry with a cap and an idle
// TTL. Runs never throw: every failure is a typed `error` part, and every run ends with exactly one terminal part.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { NodeCommandRequest, NodeCommandResponse, RunEventPart, RunRequest } from '@iop/wire';
import { isTerminalPart, RunKind, type AdapterInstance, type CliProfile } from '@iop/wire';
import { toAbortSignal } from '../cancellation.js';
import { SessionLimitError, SessionRegistry, type LogicalSession } from '../../sessions/session-registry.js';
import {
  ADAPTER_INTERFACE_VERSION,
  type Adapter,
  type AdapterDeps,
  type CommandOptions,
  type HealthProbeResult,
  type RunOptions,
} from '../adapter.js';
import type { ModelEndpoint } from '../model-endpoint.js';
import { buildCliEnvironment } from './cli-environment.js';
import { resolveProfile, type ResolvedProfile } from './cli-profile.js';
import { findExecutable } from './command-lookup.js';
import { ProfileHealth } from './profile-health.js';
import { CliAdapterError, toCliAdapterError } from './errors.js';
import { OneShotSession } from './oneshot-session.js';
import { OpencodeSession } from './opencode-session.js';
import { PersistentSession } from './persistent-session.js';
import { resolveAgentUser, type AgentUser, type AgentUserDeps } from './agent-user.js';
import { createProcessLauncher, launcherAsUser, type ProcessLauncher } from './process-launcher.js';
import { createProcessTreeControl, type ProcessTreeControl } from './process-tree.js';
import { lastUserPrompt } from './prompt.js';
import { errorPart, type SessionServices, type SessionSetup } from './session-context.js';
import { MemoryWorkspaceBindings, type WorkspaceBindings } from '../../history/workspace-bindings.js';
import type { WorkspacePolicy } from './workspace-policy.js';
import { WorkspaceTenancy } from './workspace-tenancy.js';
import {
  claudeRateLimitFields,
  parseUsageText,
  readCodexRateLimits,
  runStatusCommand,
  statusKindOf,
} from './usage-status.js';

export interface CliAdapterDeps extends AdapterDeps {
  /** Starts CLI processes (default: execa pipes / node-pty terminals). */
  launcher?: ProcessLauncher;
  /** Signals and kills process trees (default: process groups plus /proc descendants). */
  tree?: ProcessTreeControl;
  /** The node agent's working directory: default workspace and base of relative commands. */
  agentCwd?: string;
  /** The agent's environment; only an allow-list (PATH, HOME, LANG, ...) reaches CLIs. */
  inheritedEnv?: Readonly<Record<string, string | undefined>>;
  /** SIGTERM → SIGKILL grace when a tree is killed (default 2000 ms). */
  killGraceMs?: number;
  randomId?: () => string;
  /** Timeout of a CLI's own usage command for `status` (default 20 s). */
  statusTimeoutMs?: number;
  /** How `run_as` is resolved (user database, current uid). */
  agentUser?: AgentUserDeps;
  /**
   * The user of instances without their own `run_as` (`iop-node run --agent-user`, set by a service install):
   * agents of this node never run as the node's own user, and fail with run_as_unavailable when it cannot switch.
   */
  defaultRunAs?: string;
  /** Which key each workspace belongs to (default: kept in memory for this adapter's life). */
  workspaceBindings?: WorkspaceBindings;
}

export const DEFAULT_MAX_SESSIONS = 16;
export const DEFAULT_SESSION_IDLE_TTL_MS = 30 * 60 * 1000;

type CliSession = PersistentSession | OneShotSession | OpencodeSession;

function agentUserOf(
  runAs: string,
  deps: AgentUserDeps | undefined,
): AgentUser | CliAdapterError | undefined {
  try {
    return resolveAgentUser(runAs, deps);
  } catch (error) {
    return toCliAdapterError(error);
  }
}

export function createCliAdapter(instance: AdapterInstance, deps: CliAdapterDeps): Adapter {
  return new CliAdapter(instance, deps);
}

class CliAdapter implements Adapter {
  readonly interfaceVersion = ADAPTER_INTERFACE_VERSION;
  readonly type = 'cli' as const;
  readonly name: string;
  private readonly services: SessionServices;
  private readonly sessions: SessionRegistry<CliSession>;
  private readonly workspaces = new WeakMap<LogicalSession, string>();
  private readonly rateLimits = new Map<string, Record<string, unknown>>();
  private readonly agentCwd: string;
  private readonly inheritedEnv: Readonly<Record<string, string | undefined>>;
  /** The `run_as` user, or the error that makes every run fail (run_as_unavailable). */
  private readonly agentUser: AgentUser | CliAdapterError | undefined;
  private readonly profileHealth: ProfileHealth;
  private readonly tenancy: WorkspaceTenancy;
  private closed = false;

  constructor(
    private readonly instance: AdapterInstance,
    private readonly deps: CliAdapterDeps,
  ) {
    this.name = instance.name;
    this.agentCwd = deps.agentCwd ?? process.cwd();
    this.inheritedEnv = deps.inheritedEnv ?? process.env;
    this.agentUser = agentUserOf(instance.cli?.runAs || deps.defaultRunAs || '', deps.agentUser);
    this.tenancy = new WorkspaceTenancy({
      bindings: deps.workspaceBindings ?? new MemoryWorkspaceBindings(),
      ...(this.agentUser && !(this.agentUser instanceof CliAdapterError)
        ? { agentUser: this.agentUser }
        : {}),
    });
    const launcher = deps.launcher ?? createProcessLauncher();
    this.services = {
      launcher:
        this.agentUser && !(this.agentUser instanceof CliAdapterError)
          ? launcherAsUser(launcher, this.agentUser)
          : launcher,
      tree: deps.tree ?? createProcessTreeControl(),
      logger: deps.logger,
      now: deps.now,
      fetch: deps.fetch,
      randomId: deps.randomId ?? randomUUID,
      killGraceMs: deps.killGraceMs ?? 2000,
    };
    this.profileHealth = new ProfileHealth({ ...this.services, now: deps.now });
    const settings = instance.cli;
    this.sessions = new SessionRegistry<CliSession>({
      maxSessions: settings?.maxSessions || DEFAULT_MAX_SESSIONS,
      idleTtlMs: settings?.sessionIdleTtlMs || DEFAULT_SESSION_IDLE_TTL_MS,
      now: deps.now,
      onExpired: (target, sessionId) =>
        deps.logger.info(
          { adapter: this.name, target, session: sessionId },
          'closing idle CLI session (idle TTL)',
        ),
      onEvicted: (target, sessionId) =>
        deps.logger.info(
          { adapter: this.name, target, session: sessionId },
          'closing the least recently used idle CLI session (max_sessions reached)',
        ),
    });
  }

  private get profiles(): Record<string, CliProfile> {
    return this.instance.cli?.profiles ?? {};
  }

  async *run(request: RunRequest, options: RunOptions): AsyncGenerator<RunEventPart> {
    const startedAt = this.deps.now();
    const sessionId = request.sessionId || 'default';
    yield { type: 'start', sessionId, adapter: this.name, target: request.target };
    if (request.kind !== RunKind.RUN_KIND_CHAT) {
      // The edge refuses these for CLI models (400); a run that still arrives here is answered, not guessed at.
      yield {
        type: 'error',
        code: 'invalid_request',
        message:
          'a CLI agent runs conversations only: it cannot answer embedding or text completion requests',
        retryable: false,
        backendMs: 0,
      };
      return;
    }
    if (request.messages.some((message) => message.imageUrls.length > 0)) {
      // The edge refuses remote images for CLI models (400); a CLI agent is never sent to fetch a caller's URL.
      yield {
        type: 'error',
        code: 'invalid_request',
        message: 'a CLI agent takes no image URLs',
        retryable: false,
        backendMs: 0,
      };
      return;
    }
    let failure: CliAdapterError;
    // The sessions hand the signal to fetch and to process APIs, which want a real AbortSignal.
    const { signal, release } = toAbortSignal(options.signal);
    try {
      for await (const part of this.runSession(request, sessionId, signal, startedAt)) {
        yield part;
        if (isTerminalPart(part)) return;
      }
      failure = new CliAdapterError('internal', 'run ended without a result');
    } catch (error) {
      failure =
        error instanceof SessionLimitError
          ? new CliAdapterError('session_limit', error.message, { cause: error })
          : toCliAdapterError(error);
    } finally {
      release();
      this.sessions.touch(request.target, sessionId);
    }
    if (failure.code === 'internal') {
      this.deps.logger.error(
        { adapter: this.name, target: request.target, error: failure.message },
        'cli run failed',
      );
    }
    yield errorPart(failure.code, failure.message, failure.retryable, this.deps.now() - startedAt);
  }

  private async *runSession(
    request: RunRequest,
    sessionId: string,
    signal: AbortSignal,
    startedAt: number,
  ): AsyncGenerator<RunEventPart> {
    if (this.closed) throw new CliAdapterError('adapter_closed', `adapter ${this.name} is closed`);
    const profile = this.resolveTarget(request.target);
    const prompt = lastUserPrompt(request.messages);
    if (prompt === undefined)
      throw new CliAdapterError('invalid_request', 'the request has no user message to send');
    // First: a run_as that cannot be honoured makes no default directory as the wrong user.
    const env = this.environment(profile);
    const policy = this.workspacePolicy();
    // Without a workspace: the key's own default directory (workspace-tenancy.ts).
    const workspace = this.tenancy.resolve(sessionId, request.workspace, policy);
    if (!findExecutable(profile.command, env.PATH)) {
      throw new CliAdapterError(
        'command_not_found',
        `command ${profile.command} of target ${profile.name} was not found`,
      );
    }
    if (!this.sessions.get(request.target, sessionId)) {
      // A new session: never in another API key's directory (workspace-tenancy.ts).
      this.tenancy.claim(sessionId, workspace, policy);
    }
    const entry = this.sessions.open(request.target, sessionId, () =>
      this.createSession({ profile, target: request.target, sessionId, workspace, env }),
    );
    const sessionWorkspace = this.workspaces.get(entry.session) ?? workspace;
    if (request.workspace && sessionWorkspace !== workspace) {
      throw new CliAdapterError(
        'workspace_mismatch',
        `session ${sessionId} runs in ${sessionWorkspace}; terminate it to use workspace ${workspace}`,
      );
    }
    if (signal.aborted) {
      yield { type: 'cancelled', reason: typeof signal.reason === 'string' ? signal.reason : 'cancelled' };
      return;
    }
    const timeoutMs = request.timeoutMs || profile.requestTimeoutMs;
    const endpoint = await this.modelEndpoint(request, profile);
    try {
      yield* entry.session.run({
        runId: request.runId,
        prompt,
        signal,
        deadlineAt: startedAt + timeoutMs,
        startedAt,
        model: endpoint?.values,
      });
    } finally {
      // The endpoint lives exactly as long as the run: its calls end with it (`parent_ended`).
      endpoint?.close();
    }
  }

  /**
   * The run's model endpoint when the edge granted one (a `fabric_model` profile, RunRequest.model_access).
   * Only a one-shot process can be given a per-run endpoint: a persistent one would outlive it (config refuses
   * such profiles; a run that still arrives is refused here).
   */
  private async modelEndpoint(
    request: RunRequest,
    profile: ResolvedProfile,
  ): Promise<ModelEndpoint | undefined> {
    const access = request.modelAccess;
    if (!access || access.apiKey === '') return undefined;
    if (profile.kind !== 'oneshot') {
      throw new CliAdapterError(
        'invalid_profile',
        `profile ${profile.name} keeps its process past one run: fabric_model needs a one-shot mode`,
      );
    }
    const endpoints = this.deps.modelEndpoints;
    if (!endpoints) {
      throw new CliAdapterError('model_endpoint_unavailable', 'this node offers agents no model endpoint');
    }
    try {
      return await endpoints.open({ runId: request.runId, apiKey: access.apiKey, model: access.model });
    } catch (error) {
      throw new CliAdapterError(
        'model_endpoint_unavailable',
        `the run's model endpoint could not be opened: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }

  private workspacePolicy(): WorkspacePolicy {
    return {
      roots: this.instance.cli?.workspaceRoots ?? [],
      agentCwd: this.agentCwd,
      home: this.inheritedEnv.HOME,
    };
  }

  private resolveTarget(target: string): ResolvedProfile {
    const profile = this.profiles[target];
    if (!profile) {
      const known = Object.keys(this.profiles).sort().join(', ') || 'none';
      throw new CliAdapterError(
        'unknown_target',
        `unknown cli target ${target || '(empty)'} (profiles: ${known})`,
      );
    }
    return resolveProfile(target, profile, this.agentCwd);
  }

  /**
   * A CLI's environment; with `run_as`, HOME, USER and LOGNAME are that user's (its HOME is its own, not the
   * node's). Throws run_as_unavailable when `run_as` cannot be honoured: agents never fall back to the node's user.
   */
  private environment(profile: ResolvedProfile): Record<string, string> {
    const user = this.agentUser;
    if (user instanceof CliAdapterError) throw user;
    const overrides: Record<string, string> = user
      ? { HOME: user.home, USER: user.name, LOGNAME: user.name }
      : {};
    return buildCliEnvironment(this.inheritedEnv, profile.env, overrides);
  }

  private createSession(setup: SessionSetup): CliSession {
    const forget = (session: CliSession) => {
      this.sessions.remove(setup.target, setup.sessionId, session);
    };
    let session: CliSession;
    switch (setup.profile.kind) {
      case 'persistent':
        session = new PersistentSession(setup, this.services, forget);
        break;
      case 'oneshot':
        session = new OneShotSession(setup, this.services, (target, info) =>
          this.rateLimits.set(target, info),
        );
        break;
      case 'opencode-sse':
        session = new OpencodeSession(setup, this.services, forget);
        break;
      default: {
        const unreachable: never = setup.profile.kind;
        throw new CliAdapterError('invalid_profile', `unknown session kind ${String(unreachable)}`);
      }
    }
    this.workspaces.set(session, setup.workspace);
    return session;
  }

  async command(request: NodeCommandRequest, options: CommandOptions): Promise<NodeCommandResponse> {
    void options;
    const respond = (ok: boolean, result: Record<string, string>, error = ''): NodeCommandResponse => ({
      ok,
      error,
      result,
      lifecycle: undefined,
    });
    switch (request.command) {
      case 'capabilities':
        return respond(true, { adapter: 'cli', targets: Object.keys(this.profiles).sort().join(',') });
      case 'sessions': {
        const result: Record<string, string> = {};
        const entries = this.sessions.list();
        result.sessions = String(entries.length);
        entries.forEach((entry, index) => {
          result[`session.${index}.mode`] = entry.session.mode;
          result[`session.${index}.target`] = entry.target;
          result[`session.${index}.session`] = entry.sessionId;
        });
        return respond(true, result);
      }
      case 'status':
        try {
          return respond(true, await this.usageStatus(request.target));
        } catch (error) {
          return respond(false, {}, toCliAdapterError(error).message);
        }
      default:
        return respond(false, {}, `unsupported command ${request.command} for adapter ${this.name}`);
    }
  }

  private async usageStatus(target: string): Promise<Record<string, string>> {
    const profile = this.profiles[target] ? this.resolveTarget(target) : undefined;
    const kind = profile ? statusKindOf(target, profile) : undefined;
    if (!profile || !kind)
      throw new CliAdapterError('invalid_request', `status check not supported for target ${target}`);
    const base = { target, kind };
    if (kind === 'claude') {
      const seen =
        this.rateLimits.get(target) ??
        [...this.rateLimits.entries()].find(([name]) => name.startsWith('claude'))?.[1];
      if (seen) return { ...base, ...claudeRateLimitFields(seen) };
    }
    const env = this.environment(profile);
    if (kind === 'codex') {
      const codexHome = env.CODEX_HOME ?? path.join(env.HOME ?? this.agentCwd, '.codex');
      const fields = readCodexRateLimits(codexHome);
      if (fields) return { ...base, ...fields };
      return {
        ...base,
        parse_status: `no rate_limits found in rollout files under ${path.join(codexHome, 'sessions')}`,
        raw: '',
      };
    }
    if (!findExecutable(profile.command, env.PATH)) {
      throw new CliAdapterError(
        'command_not_found',
        `command ${profile.command} of target ${target} was not found`,
      );
    }
    const args = kind === 'claude' ? ['-p', '/usage'] : ['--print', '/usage'];
    const { output, timedOut } = await runStatusCommand(
      this.services,
      profile,
      args,
      this.agentCwd,
      env,
      this.deps.statusTimeoutMs ?? 20_000,
    );
    const parsed = parseUsageText(output);
    if (parsed) return { ...base, source: `${path.basename(profile.command)} ${args.join(' ')}`, ...parsed };
    return {
      ...base,
      parse_status: timedOut
        ? 'usage command timed out; raw output attached'
        : 'could not parse usage figures; raw output attached',
      raw: output,
    };
  }

  async terminateSession(target: string, sessionId: string): Promise<boolean> {
    const entry = this.sessions.remove(target, sessionId || 'default');
    if (!entry) return false;
    await entry.session.close('terminate-session');
    return true;
  }

  /** Each profile measured (profile-health.ts); the adapter is healthy when every profile is. */
  async probeHealth(signal: AbortSignal): Promise<HealthProbeResult> {
    if (this.agentUser instanceof CliAdapterError) {
      return { health: 'unhealthy', cause: 'error', detail: this.agentUser.message, models: [] };
    }
    const probed = Object.keys(this.profiles).map((name) => {
      const profile = this.resolveTarget(name);
      return { name, command: profile.command, env: this.environment(profile), cwd: this.agentCwd };
    });
    const targets = await this.profileHealth.probe(probed, signal);
    const failing = Object.values(targets).filter((target) => target.health !== 'healthy');
    const first = failing[0];
    return {
      health: first ? 'unhealthy' : 'healthy',
      ...(first?.cause ? { cause: first.cause } : {}),
      detail: first
        ? failing.map((target) => target.detail).join('; ')
        : `${probed.length} cli profiles answer --version`,
      models: [],
      targets,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.sessions.closeAll('adapter-close');
  }
}
