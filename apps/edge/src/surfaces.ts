// The surfaces `iop-edge serve` starts, in order (each factory returns undefined when its config disables it).
// Metrics first: later surfaces find the shared EdgeMetrics in the runtime's extras.
import { createA2ASurface } from './a2a/a2a-surface.js';
import { createAdminSurface } from './admin/admin-server.js';
import { bootstrapSurface } from './bootstrap/bootstrap-surface.js';
import { createMetricsSurface } from './metrics/metrics-surface.js';
import { createOpenAISurface } from './openai/openai-surface.js';
import { createRefreshSurface } from './refresh/refresh-surface.js';
import type { SurfaceFactory } from './surface.js';

export const defaultSurfaces: SurfaceFactory[] = [
  createMetricsSurface(),
  // Live config refresh: registers the RefreshConfig handler the admin API calls (refresh.enabled).
  createRefreshSurface(),
  createAdminSurface(),
  // The OpenAI-compatible API (openai.enabled); shares the runtime's provider pool.
  createOpenAISurface,
  createA2ASurface(),
  bootstrapSurface,
];
