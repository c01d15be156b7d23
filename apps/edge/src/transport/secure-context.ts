// The edge's TLS certificate and key (edge.tls.cert_file / key_file) as a secure context for the node listener.
import { readFile } from 'node:fs/promises';
import tls from 'node:tls';
import type { EdgeConfig } from '@iop/config';
import { TransportError } from './errors.js';

/** The edge's certificate and key as a TLS context (typed error when unreadable or invalid). */
export async function loadSecureContext(config: EdgeConfig): Promise<tls.SecureContext> {
  let cert: Buffer;
  let key: Buffer;
  try {
    [cert, key] = await Promise.all([
      readFile(config.edge.tls.cert_file),
      readFile(config.edge.tls.key_file),
    ]);
  } catch (error) {
    throw new TransportError(
      'tls_config',
      `cannot read edge.tls cert_file/key_file: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  try {
    return tls.createSecureContext({ cert, key, minVersion: 'TLSv1.2' });
  } catch (error) {
    throw new TransportError(
      'tls_config',
      `invalid edge.tls certificate or key: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
