// GET /api/v1/config (the config in force, secrets redacted) and POST /api/v1/config/refresh (classify or apply
// a candidate edge.yaml through the same path as `iop-edge config refresh`; disabled without refresh.enabled).
import type http from 'node:http';
import { redactConfig, type EdgeConfig } from '@iop/config';
import type { UiRefreshResult } from '@iop/ui-api';
import type { Logger } from '../logging.js';
import { UiError } from './errors.js';
import { checkMutation, readJson, requiredString, sendJson } from './ui-http.js';

export interface ConfigRoutesDeps {
  config: () => EdgeConfig;
  /** None = refresh disabled. */
  refresh?: (mode: string, candidateYaml: string) => Promise<UiRefreshResult>;
  maxBodyBytes: number;
  logger: Logger;
}

export interface ConfigRoutes {
  show(response: http.ServerResponse): void;
  refresh(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
}

export function createConfigRoutes(deps: ConfigRoutesDeps): ConfigRoutes {
  return {
    show(response) {
      sendJson(response, 200, { config: redactConfig(deps.config()) });
    },
    async refresh(request, response) {
      checkMutation(request);
      if (!deps.refresh)
        throw new UiError('refresh_disabled', 'config refresh is disabled (refresh.enabled)');
      const body = await readJson(request, deps.maxBodyBytes);
      const mode = requiredString(body, 'mode');
      const yaml = requiredString(body, 'config_yaml');
      const result = await deps.refresh(mode, yaml);
      deps.logger.info({ mode, status: result.status }, 'ui: config refresh');
      sendJson(response, 200, result);
    },
  };
}
