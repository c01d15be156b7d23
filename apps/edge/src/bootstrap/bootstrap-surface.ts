// The bootstrap surface of `iop-edge serve`: an HTTP server on bootstrap.listen serving install scripts and node
// artifacts from bootstrap.artifact_dir. Not started when that folder does not exist (an edge run from a repo
// checkout, or a host that hands out no artifacts), so it never holds a port for nothing.
import fs from 'node:fs';
import os from 'node:os';
import { listenHttp } from '../http/listen-http.js';
import { createHostGuard, guardRequests, urlAuthority } from '../http/host-guard.js';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import { readEdgeFingerprint } from '../tls/edge-identity.js';
import { EDGE_VERSION } from '../version.js';
import { createBootstrapHandler } from './bootstrap-handler.js';
import type { NetworkInterfaces } from '../http/host-guard.js';
import { bootstrapPublicUrl } from './bootstrap-urls.js';

export interface BootstrapSurfaceOptions {
  interfaces?: NetworkInterfaces;
  edgeVersion?: string;
}

/** What the bootstrap surface uses of the runtime's core. */
export interface BootstrapSurfaceDeps {
  config: EdgeConfig;
  logger: Logger;
}

export interface BootstrapSurface {
  name: 'bootstrap';
  address: string;
  close(): Promise<void>;
}

export function createBootstrapSurfaceFactory(
  options: BootstrapSurfaceOptions = {},
): (context: BootstrapSurfaceDeps) => Promise<BootstrapSurface | undefined> {
  return async (context) => {
    const { config } = context;
    const logger = context.logger.child({ surface: 'bootstrap' });
    const dir = config.bootstrap.artifact_dir;
    if (!fs.existsSync(dir)) {
      logger.info({ artifactDir: dir }, 'bootstrap server not started: artifact_dir does not exist');
      return undefined;
    }
    const interfaces = options.interfaces ?? (() => os.networkInterfaces());
    // Known once listening; the handler reads it per request (for a public URL derived from port 0).
    const bound: { port?: number } = {};
    const handler = createBootstrapHandler({
      config,
      logger,
      interfaces,
      edgeVersion: options.edgeVersion ?? EDGE_VERSION,
      boundPort: () => bound.port,
      edgeFingerprint: await readEdgeFingerprint(config),
    });
    // Nodes fetch install.sh by bootstrap.public_url (a name, or an address of this host the guard knows).
    const guard = createHostGuard({
      listen: config.bootstrap.listen,
      names: [...config.http.allowed_hosts, ...urlAuthority(config.bootstrap.public_url)],
    });
    const listener = await listenHttp(config.bootstrap.listen, guardRequests(guard, handler));
    bound.port = Number(listener.address.slice(listener.address.lastIndexOf(':') + 1));
    const publicUrl = bootstrapPublicUrl(config, interfaces, bound.port);
    logger.info({ listen: listener.address, publicUrl, artifactDir: dir }, 'bootstrap server listening');
    return {
      name: 'bootstrap',
      address: `${listener.address} (${publicUrl}/install.sh)`,
      close: () => listener.close(),
    };
  };
}

export const bootstrapSurface = createBootstrapSurfaceFactory();
