// The edge's identity as nodes pin it: `sha256:<hex>` of the DER SubjectPublicKeyInfo of the edge's TLS
// certificate (the key, not the certificate, so re-issuing a certificate for the same key keeps every pin valid —
// the same choice as kubeadm's --discovery-token-ca-cert-hash). The edge prints it; the node compares it with
// the key the TLS handshake presented before it sends its token.
import { createHash, X509Certificate, type KeyObject } from 'node:crypto';

export const EDGE_FINGERPRINT_PREFIX = 'sha256:';
const FINGERPRINT_PATTERN = /^sha256:([0-9a-f]{64})$/;

/** `sha256:<lowercase hex>` of a DER-encoded SubjectPublicKeyInfo. */
export function fingerprintOfSpki(spkiDer: Buffer): string {
  return `${EDGE_FINGERPRINT_PREFIX}${createHash('sha256').update(spkiDer).digest('hex')}`;
}

/** The fingerprint of a public key object. */
export function fingerprintOfPublicKey(key: KeyObject): string {
  return fingerprintOfSpki(key.export({ type: 'spki', format: 'der' }));
}

/** The fingerprint of a certificate (PEM text, DER bytes or a parsed X509Certificate). */
export function fingerprintOfCertificate(certificate: X509Certificate | string | Buffer): string {
  const parsed = certificate instanceof X509Certificate ? certificate : new X509Certificate(certificate);
  return fingerprintOfPublicKey(parsed.publicKey);
}

/**
 * Normalizes an operator-typed fingerprint: `sha256:` prefix (any case) and 64 hex digits, optionally separated
 * by colons as some tools print them. Undefined when the text is not one.
 */
export function parseEdgeFingerprint(text: string): string | undefined {
  const trimmed = text.trim().toLowerCase();
  if (!trimmed.startsWith(EDGE_FINGERPRINT_PREFIX)) return undefined;
  const hex = trimmed.slice(EDGE_FINGERPRINT_PREFIX.length).replace(/:/g, '');
  const normalized = `${EDGE_FINGERPRINT_PREFIX}${hex}`;
  return FINGERPRINT_PATTERN.test(normalized) ? normalized : undefined;
}
