// The surfaces `iop-edge serve` starts, in order (each factory returns undefined when its config disables it).
import type { SurfaceFactory } from './surface.js';

export const defaultSurfaces: SurfaceFactory[] = [];
