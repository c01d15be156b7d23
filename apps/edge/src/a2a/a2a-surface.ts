// Starts the A2A listener (`a2a.listen`) over the edge service.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logging.js';
import { edgeHttpMetrics, type HttpMetricsRecorder } from '../metrics/http-metrics.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import type { EdgeService } from '../service/types.js';
import { listenHttp } from '../http/listen-http.js';
import { createHostGuard, guardRequests, urlAuthority } from '../http/host-guard.js';
import type { EdgeConfig } from '@iop/config';
import { EDGE_VERSION } from '../version.js';
import type { Governance } from '../governance/governance.js';
import type { PrincipalResolver } from '../governance/principal.js';
import type { FabricCalls } from '../service/fabric-calls.js';
import { fromWirePrincipal } from '../governance/wire-principal.js';
import { A2A_RESUBSCRIBE_TOPIC, A2A_TASKS_TOPIC, createA2AApp, type A2ATaskCall } from './a2a-app.js';
import { FabricStreamError } from '../service/fabric-calls.js';
import { JSON_RPC_ERRORS, JsonRpcError } from './json-rpc.js';
import { TaskManager, type A2ASettings } from './task-manager.js';

export interface A2ASurfaceOptions {
  listen: string;
  path: string;
  bearerToken: string;
  /** The keys in force (`openai.api_keys` plus the bearer token, live); none = the bearer token alone. */
  principals?: () => PrincipalResolver;
  edgeId: string;
  version: string;
  publicUrl?: string;
  /** `http.allowed_hosts`: names besides the listener's own addresses and `publicUrl` that Host may carry. */
  allowedHosts?: readonly string[];
  settings: A2ASettings;
  service: EdgeService;
  logger: Logger;
  now?: () => number;
  metrics?: HttpMetricsRecorder;
  /** Cluster mode: tasks/get and tasks/cancel of a task another edge holds are asked of it (and answered here). */
  peers?: FabricCalls;
}

export interface RunningA2ASurface {
  name: 'a2a';
  address: string;
  close(): Promise<void>;
}

export async function startA2ASurface(options: A2ASurfaceOptions): Promise<RunningA2ASurface> {
  const logger = options.logger.child({ component: 'a2a' });
  const tasks = new TaskManager(options.settings, {
    service: options.service,
    logger,
    now: options.now ?? Date.now,
    newId: randomUUID,
  });
  const app = createA2AApp({
    path: options.path,
    bearerToken: options.bearerToken,
    ...(options.principals ? { principals: options.principals } : {}),
    edgeId: options.edgeId,
    version: options.version,
    adapter: options.settings.adapter,
    target: options.settings.target,
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
    tasks,
    logger,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.peers ? { peers: options.peers } : {}),
  });
  // Other edges ask for the tasks this edge holds; a task it does not hold is not its answer.
  const stopServing = options.peers?.serve(A2A_TASKS_TOPIC, async (payload) => {
    const call = payload as A2ATaskCall;
    const principal = call.principal ? fromWirePrincipal(call.principal) : undefined;
    if (call.method !== 'tasks/get' && call.method !== 'tasks/cancel') {
      return { error: { code: JSON_RPC_ERRORS.methodNotFound, message: `method ${call.method} not found` } };
    }
    try {
      const value =
        call.method === 'tasks/get'
          ? tasks.get(call.taskId, call.historyLength, principal)
          : await tasks.cancel(call.taskId, principal);
      return { value };
    } catch (error) {
      if (!(error instanceof JsonRpcError)) throw error;
      if (error.code === JSON_RPC_ERRORS.taskNotFound) return undefined;
      return { error: { code: error.code, message: error.message } };
    }
  });
  // ... and resubscribe to them: this edge streams a task it holds to the edge the client reached.
  const stopStreaming = options.peers?.serveStream(A2A_RESUBSCRIBE_TOPIC, (payload, signal) => {
    const call = payload as A2ATaskCall;
    const principal = call.principal ? fromWirePrincipal(call.principal) : undefined;
    try {
      return tasks.resubscribe(call.taskId, signal, principal);
    } catch (error) {
      if (!(error instanceof JsonRpcError)) throw error;
      if (error.code === JSON_RPC_ERRORS.taskNotFound) return undefined;
      throw new FabricStreamError(error.code, error.message);
    }
  });
  const guard = createHostGuard({
    listen: options.listen,
    names: [...(options.allowedHosts ?? []), ...urlAuthority(options.publicUrl ?? '')],
  });
  const listener = await listenHttp(options.listen, guardRequests(guard, app));
  logger.info({ address: listener.address, path: options.path }, 'a2a listening');
  return {
    name: 'a2a',
    address: listener.address,
    close: () => {
      stopServing?.();
      stopStreaming?.();
      return listener.close();
    },
  };
}

/** Task store and context bounds (documented in agent-contract/outer/a2a-json-rpc-api.md). */
export const A2A_LIMITS = { maxTasks: 1000, finishedTaskTtlMs: 60 * 60 * 1000, maxContexts: 1000 } as const;

/** The A2A surface as the runtime starts it: from `a2a.*` config, or nothing when disabled. */
/** What the A2A surface uses of the runtime's core. */
export interface A2ASurfaceDeps {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  metrics: EdgeMetrics;
  /** API keys (the same principals as the OpenAI surface). */
  governance?: Pick<Governance, 'keys'>;
  /** Cluster mode: the other edges (tasks another edge holds). */
  peers?: FabricCalls;
}

export function createA2ASurface() {
  return async (context: A2ASurfaceDeps): Promise<RunningA2ASurface | undefined> => {
    const { a2a, edge } = context.config;
    if (!a2a.enabled) return undefined;
    return startA2ASurface({
      listen: a2a.listen,
      path: a2a.path,
      bearerToken: a2a.bearer_token,
      ...(context.governance ? { principals: context.governance.keys.a2a } : {}),
      edgeId: edge.id,
      version: EDGE_VERSION,
      ...(a2a.public_url ? { publicUrl: a2a.public_url } : {}),
      allowedHosts: context.config.http.allowed_hosts,
      settings: {
        node: a2a.node,
        adapter: a2a.adapter,
        target: a2a.target,
        sessionId: a2a.session_id,
        timeoutSec: a2a.timeout_sec,
        ...A2A_LIMITS,
      },
      service: context.service,
      logger: context.logger,
      metrics: edgeHttpMetrics(context.metrics, 'a2a'),
      ...(context.peers ? { peers: context.peers } : {}),
    });
  };
}
