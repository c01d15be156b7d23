// Runtime step "start surfaces": each factory gets the complete core and returns its listening surface (or
// undefined when its config disables it). A surface that fails to start stops the whole edge.
import type { EdgeCore } from '../edge-core.js';
import type { Logger } from '../logging.js';
import type { Surface, SurfaceFactory } from '../surface.js';
import { errorText } from './error-text.js';

/** Starts the surfaces in order into `surfaces` (which `stop` closes in reverse); on a failure calls `stop`. */
export async function startSurfaces(
  factories: readonly SurfaceFactory[],
  core: EdgeCore,
  surfaces: Surface[],
  logger: Logger,
  stop: (reason: string) => Promise<void>,
): Promise<void> {
  try {
    for (const factory of factories) {
      const surface = await factory(core);
      if (!surface) continue;
      surfaces.push(surface);
      logger.info({ surface: surface.name, address: surface.address }, 'surface listening');
    }
  } catch (error) {
    logger.error({ error: errorText(error) }, 'a surface failed to start; stopping the edge');
    await stop('startup-failed');
    throw error;
  }
}
