// One self-signed X.509 v3 certificate for the edge: an ECDSA P-256 key, subjectAltName entries for the hosts
// nodes and operators use to reach the edge, serverAuth only. Built with the DER encoder next to this file and
// signed with node:crypto, so no OpenSSL CLI and no npm package is needed on the edge host. Nodes do not rely on
// the certificate's names or dates (they pin the key's fingerprint); an operator's own CA is the alternative.
import { systemClock } from '../clock.js';
import { generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import net from 'node:net';
import { fingerprintOfPublicKey } from '@iop/wire';
import {
  derBitString,
  derBoolean,
  derExplicit,
  derImplicitPrimitive,
  derOctetString,
  derOid,
  derSequence,
  derSet,
  derSmallInteger,
  derTime,
  derUnsignedInteger,
  derUtf8String,
} from './der.js';

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extendedKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

export interface SelfSignedCertificateOptions {
  /** Subject common name, e.g. `iop-edge edge-01`. */
  commonName: string;
  /** DNS names and IP addresses (v4 or v6, without brackets) for subjectAltName; duplicates are dropped. */
  hosts: readonly string[];
  /** Start of validity (defaults to now); the certificate is valid from one hour before it. */
  now?: Date;
  /** Validity in days (default ten years). */
  validDays?: number;
  /** Injected for deterministic tests. */
  generateKey?: () => { privateKey: KeyObject; publicKey: KeyObject };
}

export interface SelfSignedCertificate {
  /** PEM `CERTIFICATE`. */
  certificatePem: string;
  /** PEM `PRIVATE KEY` (PKCS#8). */
  privateKeyPem: string;
  /** `sha256:<hex>` of the SubjectPublicKeyInfo (what nodes pin). */
  fingerprint: string;
}

function name(commonName: string): Buffer {
  return derSequence(
    derSet(derSequence(derOid(OID.organization), derUtf8String('IOP'))),
    derSet(derSequence(derOid(OID.commonName), derUtf8String(commonName))),
  );
}

function generalName(host: string): Buffer {
  const family = net.isIP(host);
  if (family === 4) return derImplicitPrimitive(7, Buffer.from(host.split('.').map(Number)));
  if (family === 6) return derImplicitPrimitive(7, ipv6Bytes(host));
  return derImplicitPrimitive(2, Buffer.from(host, 'ascii'));
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail] = address.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':'));
  let groups = parse(head);
  if (tail !== undefined) {
    const after = parse(tail);
    groups = [...groups, ...Array<string>(8 - groups.length - after.length).fill('0'), ...after];
  }
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16), index * 2));
  return bytes;
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return derSequence(derOid(oid), ...(critical ? [derBoolean(true)] : []), derOctetString(value));
}

/** Valid DNS name or IP literal for a SAN; anything else is refused (it would make a broken certificate). */
export function isCertificateHost(host: string): boolean {
  if (net.isIP(host) !== 0) return true;
  return /^(?=.{1,253}$)([A-Za-z0-9*]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(
    host,
  );
}

export function createSelfSignedCertificate(options: SelfSignedCertificateOptions): SelfSignedCertificate {
  const hosts = [...new Set(options.hosts.map((host) => host.replace(/^\[|\]$/g, '')))];
  if (hosts.length === 0) throw new RangeError('a certificate needs at least one host name or address');
  for (const host of hosts) {
    if (!isCertificateHost(host)) throw new RangeError(`not a host name or IP address: '${host}'`);
  }
  const { privateKey, publicKey } =
    options.generateKey?.() ?? generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const now = options.now ?? new Date(systemClock.now());
  const notBefore = new Date(Math.floor(now.getTime() / 1000) * 1000 - 3_600_000);
  const notAfter = new Date(notBefore.getTime() + (options.validDays ?? 3650) * 86_400_000);
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f; // positive, at most 20 octets (RFC 5280 §4.1.2.2)
  const signatureAlgorithm = derSequence(derOid(OID.ecdsaWithSha256));
  const subject = name(options.commonName);
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const extensions = derSequence(
    extension(OID.basicConstraints, true, derSequence()),
    // digitalSignature (bit 0): the only use of an ECDSA TLS server key.
    extension(OID.keyUsage, true, Buffer.from([0x03, 0x02, 0x07, 0x80])),
    extension(OID.extendedKeyUsage, false, derSequence(derOid(OID.serverAuth))),
    extension(OID.subjectAltName, false, derSequence(...hosts.map(generalName))),
  );
  const tbs = derSequence(
    derExplicit(0, derSmallInteger(2)),
    derUnsignedInteger(serial),
    signatureAlgorithm,
    subject,
    derSequence(derTime(notBefore), derTime(notAfter)),
    subject,
    spki,
    derExplicit(3, extensions),
  );
  const signature = sign('sha256', tbs, privateKey);
  const der = derSequence(tbs, signatureAlgorithm, derBitString(signature));
  const certificatePem = `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
  // Parse it back: a malformed encoding fails here, not in a TLS handshake later.
  const parsed = new X509Certificate(certificatePem);
  if (!parsed.verify(publicKey)) throw new Error('self-signed certificate does not verify with its own key');
  return {
    certificatePem,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    fingerprint: fingerprintOfPublicKey(publicKey),
  };
}
