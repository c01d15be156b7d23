// TLS for the admin API. Reachable beyond loopback, the admin API always carries a bearer token, so it speaks
// TLS with the edge's own certificate (config validation requires edge.tls then); on loopback it stays plaintext.
// The server and the CLI clients take the decision from the same config. A client trusts exactly the configured
// certificate's key (a pin, like the nodes'), so dialing a wildcard listen on 127.0.0.1 or the host by another
// name works without hostname checks and an impostor is still refused.
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { PeerCertificate } from 'node:tls';
import { isLoopbackListen, type RefreshConfig, type TlsConfig } from '@iop/config';
import { fingerprintOfCertificate } from '@iop/wire';

/** The edge's certificate and key when the admin API must use TLS; undefined for a loopback admin API. */
export function adminTlsFiles(config: {
  refresh: Pick<RefreshConfig, 'listen'>;
  edge?: { tls: TlsConfig };
}): { certFile: string; keyFile: string } | undefined {
  const tls = config.edge?.tls;
  if (!tls?.enabled || isLoopbackListen(config.refresh.listen)) return undefined;
  return { certFile: tls.cert_file, keyFile: tls.key_file };
}

/** Server side: the PEM bytes for grpc's ServerCredentials.createSsl. */
export async function readAdminServerTls(
  files: { certFile: string; keyFile: string } | undefined,
): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  if (!files) return undefined;
  const [cert, key] = await Promise.all([readFile(files.certFile), readFile(files.keyFile)]);
  return { cert, key };
}

/** Client side: trust the configured certificate and accept only a peer presenting its key. */
export async function readAdminClientTls(
  files: { certFile: string } | undefined,
): Promise<{ ca: Buffer; fingerprint: string } | undefined> {
  if (!files) return undefined;
  const ca = await readFile(files.certFile);
  return { ca, fingerprint: fingerprintOfCertificate(ca) };
}

/** A grpc-js checkServerIdentity that compares the peer's key with the pin instead of its names. */
export function pinnedServerIdentity(fingerprint: string) {
  return (_host: string, certificate: PeerCertificate): Error | undefined => {
    const presented = certificate.raw
      ? fingerprintOfCertificate(new X509Certificate(certificate.raw))
      : 'none';
    return presented === fingerprint
      ? undefined
      : new Error(`the admin API presented key ${presented}, not the edge's ${fingerprint}`);
  };
}
