// GET /api/v1/sessions (the CLI sessions each connected node holds per enabled CLI adapter, asked of the nodes
// with a bounded wait) and POST /api/v1/sessions/terminate (ends one through the service).
import type http from 'node:http';
import type { EdgeConfig } from '@iop/config';
import type { UiNodeSessions } from '@iop/ui-api';
import { create } from '@iop/wire';
import type { Logger } from '../logging.js';
import type { EdgeService } from '../service/types.js';
import { checkMutation, optionalString, readJson, requiredString, sendJson } from './ui-http.js';

export interface SessionRoutesDeps {
  service: Pick<EdgeService, 'listNodes' | 'nodeCommand' | 'terminateSession'>;
  config: () => EdgeConfig;
  /** How long a node has to answer a `sessions` command. */
  nodeCommandTimeoutMs: number;
  maxBodyBytes: number;
  logger: Logger;
}

export interface SessionRoutes {
  list(response: http.ServerResponse): Promise<void>;
  terminate(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
}

export function createSessionRoutes(deps: SessionRoutesDeps): SessionRoutes {
  async function listSessions(): Promise<UiNodeSessions[]> {
    const config = deps.config();
    const out: UiNodeSessions[] = [];
    const jobs: Promise<void>[] = [];
    for (const node of deps.service.listNodes()) {
      const nodeConfig = config.nodes.find((entry) => entry.id === node.nodeId);
      const adapters = (nodeConfig?.adapters.instances ?? [])
        .filter((instance) => instance.type === 'cli' && instance.enabled)
        .map((instance) => instance.name);
      for (const adapter of adapters) {
        const row: UiNodeSessions = { node_id: node.nodeId, adapter, sessions: [], error: '' };
        out.push(row);
        jobs.push(askSessions(node.nodeId, row));
      }
    }
    await Promise.all(jobs);
    return out;
  }

  function askSessions(nodeId: string, row: UiNodeSessions): Promise<void> {
    return deps.service
      .nodeCommand({
        node: nodeId,
        request: create.nodeCommandRequest({ command: 'sessions', adapter: row.adapter }),
        timeoutMs: deps.nodeCommandTimeoutMs,
      })
      .then(
        (response) => {
          if (!response.ok) row.error = response.error || 'the node refused the sessions command';
          else row.sessions = parseSessions(response.result);
        },
        (error: unknown) => {
          row.error = error instanceof Error ? error.message : String(error);
        },
      );
  }

  return {
    async list(response) {
      sendJson(response, 200, { sessions: await listSessions() });
    },
    async terminate(request, response) {
      checkMutation(request);
      const body = await readJson(request, deps.maxBodyBytes);
      const ref = {
        node: requiredString(body, 'node_id'),
        adapter: requiredString(body, 'adapter'),
        target: optionalString(body, 'target'),
        sessionId: requiredString(body, 'session_id'),
      };
      const nodeId = await deps.service.terminateSession(ref);
      deps.logger.info(
        { node: nodeId, adapter: ref.adapter, session: ref.sessionId },
        'ui: session terminated',
      );
      sendJson(response, 200, { terminated: true, node_id: nodeId });
    },
  };
}

/** `session.<i>.<field>` entries of a `sessions` command result. */
function parseSessions(result: Record<string, string>): UiNodeSessions['sessions'] {
  const groups = new Map<number, Record<string, string>>();
  for (const [key, value] of Object.entries(result)) {
    const match = /^session\.(\d+)\.([a-z_]+)$/.exec(key);
    if (!match) continue;
    const index = Number(match[1]);
    const group = groups.get(index) ?? {};
    group[match[2] ?? ''] = value;
    groups.set(index, group);
  }
  return [...groups.entries()]
    .sort(([left], [right]) => left - right)
    .map(([, group]) => ({
      session_id: group.session ?? group.session_id ?? '',
      target: group.target ?? '',
      mode: group.mode ?? '',
    }));
}
