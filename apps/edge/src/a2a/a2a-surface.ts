// Starts the A2A listener (`a2a.listen`) over the edge service.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logging.js';
import type { EdgeService } from '../service/types.js';
import { listenHttp } from '../http/listen-http.js';
import { createA2AApp } from './a2a-app.js';
import { TaskManager, type A2ASettings } from './task-manager.js';

export interface A2ASurfaceOptions {
  listen: string;
  path: string;
  bearerToken: string;
  edgeId: string;
  version: string;
  publicUrl?: string;
  settings: A2ASettings;
  service: EdgeService;
  logger: Logger;
  now?: () => number;
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
    edgeId: options.edgeId,
    version: options.version,
    adapter: options.settings.adapter,
    target: options.settings.target,
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
    tasks,
    logger,
  });
  const listener = await listenHttp(options.listen, app);
  logger.info({ address: listener.address, path: options.path }, 'a2a listening');
  return { name: 'a2a', address: listener.address, close: () => listener.close() };
}
