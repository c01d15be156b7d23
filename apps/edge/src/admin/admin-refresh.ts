// The admin API's RefreshConfig handler over the runtime's config refresher: a refresh result (applied,
// restart_required or rejected, with its report) is the answer; only failures without a result — another refresh
// holding the lock, the edge shutting down — become gRPC statuses.
import { status } from '@grpc/grpc-js';
import type { RefreshConfigResponse } from '@iop/wire';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import { isRefreshError } from '../refresh/errors.js';
import { toRefreshConfigResponse } from '../refresh/refresh-result.js';
import type { RefreshHandler } from './admin-handlers.js';
import { AdminCallError } from './grpc-status.js';

export function refreshHandler(refresher: ConfigRefresher): RefreshHandler {
  return async (mode, configYaml, configPath): Promise<RefreshConfigResponse> => {
    try {
      return toRefreshConfigResponse(await refresher.refresh(mode, configYaml, configPath));
    } catch (error) {
      if (!isRefreshError(error)) throw error;
      const grpcCode = error.code === 'refresh_busy' ? status.ABORTED : status.UNAVAILABLE;
      throw new AdminCallError(grpcCode, error.code, error.message);
    }
  };
}
