// GET /api/v1/runs (the dashboard's recent runs, filtered: status, model, provider, node, surface, q, limit) and
// GET /api/v1/runs/<id> (one run's timeline and text), both read from the run log (run-log.ts).
import type http from 'node:http';
import { UiError } from './errors.js';
import type { RunFilter, RunLog } from './run-log.js';
import { sendJson } from './ui-http.js';

export const RUN_PATH_PREFIX = '/api/v1/runs/';

export interface RunRoutes {
  list(response: http.ServerResponse, params: URLSearchParams): void;
  /** `path` starts with RUN_PATH_PREFIX. */
  detail(response: http.ServerResponse, path: string): void;
}

export function createRunRoutes(runLog: Pick<RunLog, 'list' | 'get'>): RunRoutes {
  return {
    list(response, params) {
      sendJson(response, 200, { runs: runLog.list(runFilter(params)) });
    },
    detail(response, path) {
      const runId = decodeURIComponent(path.slice(RUN_PATH_PREFIX.length));
      const detail = runLog.get(runId);
      if (!detail) throw new UiError('not_found', `no run ${runId} in the dashboard's recent runs`);
      sendJson(response, 200, detail);
    },
  };
}

function runFilter(params: URLSearchParams): RunFilter {
  const limit = params.get('limit');
  const parsed = limit === null ? undefined : Number(limit);
  if (parsed !== undefined && (!Number.isInteger(parsed) || parsed < 1)) {
    throw new UiError('invalid_request', 'limit must be a positive integer');
  }
  return {
    status: params.get('status') ?? undefined,
    model: params.get('model') ?? undefined,
    provider: params.get('provider') ?? undefined,
    node: params.get('node') ?? undefined,
    surface: params.get('surface') ?? undefined,
    text: params.get('q') ?? undefined,
    limit: parsed,
  };
}
