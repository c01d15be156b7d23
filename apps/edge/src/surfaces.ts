// The surfaces `iop-edge serve` starts (each factory returns undefined when its config disables it). Every one
// receives the runtime's typed core and uses only what its own deps type names, so their order does not matter.
import { createA2ASurface } from './a2a/a2a-surface.js';
import { anthropicRoutesFor } from './anthropic/anthropic-routes.js';
import { createAdminSurface } from './admin/admin-server.js';
import { bootstrapSurface } from './bootstrap/bootstrap-surface.js';
import { createMetricsSurface } from './metrics/metrics-surface.js';
import { createOpenAISurface } from './openai/openai-surface.js';
import type { SurfaceFactory } from './surface.js';
import { createUiSurface } from './ui/ui-surface.js';

export const defaultSurfaces: SurfaceFactory[] = [
  createMetricsSurface(),
  createAdminSurface(),
  // The Anthropic Messages API shares the OpenAI listener (same keys and models).
  (core) => createOpenAISurface(core, { mounts: [anthropicRoutesFor(core)] }),
  createA2ASurface(),
  bootstrapSurface,
  // The ops dashboard (ui.enabled): assets embedded from @iop/edge-ui.
  createUiSurface(),
];
