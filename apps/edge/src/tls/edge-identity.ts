// The edge's TLS identity on disk: `edge-key.pem` (mode 0600) and `edge-cert.pem` in a directory (the data dir),
// created once by `config init` / `setup` and then kept — re-running either never replaces an existing key, so
// the fingerprint nodes pinned stays valid. Also reads the fingerprint back for `env` and `node register`.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fingerprintOfCertificate } from '@iop/wire';
import type { EdgeConfig } from '@iop/config';
import { createSelfSignedCertificate } from './self-signed-certificate.js';

export const EDGE_KEY_FILE = 'edge-key.pem';
export const EDGE_CERT_FILE = 'edge-cert.pem';

export interface EdgeIdentityFiles {
  keyFile: string;
  certFile: string;
  fingerprint: string;
  /** False when both files were already there and were kept. */
  created: boolean;
}

/** Host names for the certificate: the public URL's host, the listen host unless a wildcard, and loopback. */
export function certificateHosts(publicUrl: string, listen: string): string[] {
  const hosts: string[] = [];
  try {
    hosts.push(new URL(publicUrl).hostname.replace(/^\[|\]$/g, ''));
  } catch {
    // an invalid URL is reported by the config check; the certificate still gets the other names
  }
  const listenHost = listen.slice(0, listen.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  if (listenHost !== '' && listenHost !== '0.0.0.0' && listenHost !== '::') hosts.push(listenHost);
  hosts.push('localhost', '127.0.0.1');
  return [...new Set(hosts.filter((host) => host !== ''))];
}

/**
 * Makes sure `dir` holds the edge's key and certificate. `dir` is created (0700) only when missing; an existing
 * directory's owner and mode are left alone. Existing files are kept (their fingerprint is returned).
 */
export async function ensureEdgeIdentity(options: {
  dir: string;
  commonName: string;
  hosts: readonly string[];
}): Promise<EdgeIdentityFiles> {
  const keyFile = path.join(options.dir, EDGE_KEY_FILE);
  const certFile = path.join(options.dir, EDGE_CERT_FILE);
  const existingCert = await readIfPresent(certFile);
  const existingKey = await readIfPresent(keyFile);
  if (existingCert !== undefined && existingKey !== undefined) {
    return { keyFile, certFile, fingerprint: fingerprintOfCertificate(existingCert), created: false };
  }
  if (existingCert !== undefined || existingKey !== undefined) {
    throw new Error(
      `found only one of ${keyFile} and ${certFile}: restore the other or remove it to make a new identity`,
    );
  }
  await fs.mkdir(options.dir, { recursive: true, mode: 0o700 });
  const made = createSelfSignedCertificate({ commonName: options.commonName, hosts: options.hosts });
  // Exclusive creates: two concurrent inits cannot pair one's key with the other's certificate.
  await fs.writeFile(keyFile, made.privateKeyPem, { mode: 0o600, flag: 'wx' });
  await fs.chmod(keyFile, 0o600);
  await fs.writeFile(certFile, made.certificatePem, { mode: 0o644, flag: 'wx' });
  return { keyFile, certFile, fingerprint: made.fingerprint, created: true };
}

/** The fingerprint of the configured certificate; undefined when edge.tls is off. Throws when unreadable. */
export async function readEdgeFingerprint(config: EdgeConfig): Promise<string | undefined> {
  if (!config.edge.tls.enabled) return undefined;
  return fingerprintOfCertificate(await fs.readFile(config.edge.tls.cert_file));
}

async function readIfPresent(file: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
