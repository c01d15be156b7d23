// Where nodes reach this edge's bootstrap server, and the one-line installers `node register` prints. The
// public URL is bootstrap.public_url, else derived from bootstrap.listen (a wildcard host becomes this machine's
// first non-internal IPv4 address). The one-liners pin the SHA-256 of the script they fetch and refuse to run a
// script with another hash (the script in turn pins the artifacts and the edge's key), then pass the node id,
// the token, the edge address and fingerprint and the artifact URL; the token reaches bash through its
// environment (not its arguments) and PowerShell as a parameter of a function in the current session, so it
// never shows in a process list.
import type { EdgeConfig } from '@iop/config';
import type { NetworkInterfaces } from '../http/host-guard.js';
import { parseListenAddress } from '../net/listen-address.js';
import { psQuote, shQuote } from './shell-quote.js';

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
  /** sha256:<hex> of the edge's TLS key; '' when the edge runs without TLS. */
  edgeFingerprint: string;
  /** SHA-256 (hex) of the script the line fetches (install.sh for bash, install.ps1 for PowerShell). */
  scriptSha256: string;
}

function checkedSha256(hex: string): string {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`not a SHA-256 hex digest: '${hex}'`);
  return hex;
}

/**
 * Linux/macOS: download install.sh to a temp file, check its SHA-256 (sha256sum, or shasum on macOS) against the
 * pinned value, and only then run it with bash; the exit status is the installer's (1 when the check failed).
 */
export function unixInstallCommand(
  values: InstallCommandValues,
  options: { service?: boolean } = {},
): string {
  const hash = checkedSha256(values.scriptSha256);
  const service = options.service ? ' --service' : '';
  const pin = values.edgeFingerprint
    ? ` --edge-fingerprint ${shQuote(values.edgeFingerprint, 'edge fingerprint')}`
    : '';
  return (
    `f="$(mktemp)" && curl -fsSL ${shQuote(`${values.publicUrl}/install.sh`, 'public URL')} -o "$f" && ` +
    `if { sha256sum "$f" 2>/dev/null || shasum -a 256 "$f"; } | grep -q '^${hash} '; ` +
    `then IOP_TOKEN=${shQuote(values.token, 'token')} bash "$f" --node-id ${shQuote(values.nodeId, 'node id')} ` +
    `--edge ${shQuote(values.edgeAddress, 'edge address')}${pin} ` +
    `--artifact-url ${shQuote(artifactUrl(values.publicUrl), 'artifact URL')}${service}; ` +
    `else echo 'iop: install.sh does not match the SHA-256 pinned in this line; not running it' >&2; false; fi; ` +
    `s=$?; rm -f "$f"; (exit $s)`
  );
}

/**
 * Windows, pasted into PowerShell (5.1 or 7): downloads install.ps1 as bytes, checks them with Get-FileHash
 * against the pinned SHA-256, loads the script into the session and calls Start-IopNode; a mismatch throws
 * before anything runs.
 */
export function windowsInstallCommand(values: InstallCommandValues): string {
  const hash = checkedSha256(values.scriptSha256);
  const pin = values.edgeFingerprint
    ? ` -EdgeFingerprint ${psQuote(values.edgeFingerprint, 'edge fingerprint')}`
    : '';
  return (
    `$b = (New-Object Net.WebClient).DownloadData(${psQuote(`${values.publicUrl}/install.ps1`, 'public URL')}); ` +
    `if ((Get-FileHash -Algorithm SHA256 -InputStream ([IO.MemoryStream]::new($b))).Hash -ne '${hash}') ` +
    `{ throw 'iop: install.ps1 does not match the SHA-256 pinned in this line; not running it' }; ` +
    `iex ([Text.Encoding]::UTF8.GetString($b)); ` +
    `Start-IopNode -NodeId ${psQuote(values.nodeId, 'node id')} -Token ${psQuote(values.token, 'token')} ` +
    `-Edge ${psQuote(values.edgeAddress, 'edge address')}${pin} ` +
    `-ArtifactUrl ${psQuote(artifactUrl(values.publicUrl), 'artifact URL')}`
  );
}
