// Where nodes reach this edge's bootstrap server, and the one-line installers `node register` prints. The
// public URL is bootstrap.public_url, else derived from bootstrap.listen (a wildcard host becomes this machine's
// first non-internal IPv4 address). The one-liners pass only the node id, the token, the artifact URL and the
// edge address; the token reaches bash through its environment (not its arguments) and PowerShell as a
// parameter of a function in the current session, so it never shows in a process list.
import type os from 'node:os';
import type { EdgeConfig } from '@iop/config';
import { parseListenAddress } from '../net/listen-address.js';
import { psQuote, shQuote } from './shell-quote.js';

export type NetworkInterfaces = () => ReturnType<typeof os.networkInterfaces>;

/** Base URL without a trailing slash, e.g. http://192.0.2.10:19091. */
export function bootstrapPublicUrl(
  config: EdgeConfig,
  interfaces: NetworkInterfaces,
  /** The port actually bound, when bootstrap.listen asks for an ephemeral one (port 0). */
  boundPort?: number,
): string {
  if (config.bootstrap.public_url) return config.bootstrap.public_url.replace(/\/+$/, '');
  const listen = parseListenAddress(config.bootstrap.listen);
  const host = listen.host;
  const port = listen.port === 0 && boundPort !== undefined ? boundPort : listen.port;
  let shown = host;
  if (host === '0.0.0.0' || host === '::' || host === '') {
    shown = '127.0.0.1';
    outer: for (const entries of Object.values(interfaces())) {
      for (const entry of entries ?? []) {
        if (entry.family === 'IPv4' && !entry.internal) {
          shown = entry.address;
          break outer;
        }
      }
    }
  }
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

export function artifactUrl(publicUrl: string): string {
  return `${publicUrl}/artifacts`;
}

export interface InstallCommandValues {
  publicUrl: string;
  nodeId: string;
  token: string;
  edgeAddress: string;
}

/** Linux/macOS: `curl … | IOP_TOKEN=… bash -s -- …`. */
export function unixInstallCommand(values: InstallCommandValues): string {
  return (
    `curl -fsSL ${shQuote(`${values.publicUrl}/install.sh`, 'public URL')} | ` +
    `IOP_TOKEN=${shQuote(values.token, 'token')} bash -s -- --node-id ${shQuote(values.nodeId, 'node id')} ` +
    `--edge ${shQuote(values.edgeAddress, 'edge address')} ` +
    `--artifact-url ${shQuote(artifactUrl(values.publicUrl), 'artifact URL')}`
  );
}

/** Windows, pasted into PowerShell: loads install.ps1 into the session and calls Start-IopNode. */
export function windowsInstallCommand(values: InstallCommandValues): string {
  return (
    `iex (irm ${psQuote(`${values.publicUrl}/install.ps1`, 'public URL')}); ` +
    `Start-IopNode -NodeId ${psQuote(values.nodeId, 'node id')} -Token ${psQuote(values.token, 'token')} ` +
    `-Edge ${psQuote(values.edgeAddress, 'edge address')} ` +
    `-ArtifactUrl ${psQuote(artifactUrl(values.publicUrl), 'artifact URL')}`
  );
}
