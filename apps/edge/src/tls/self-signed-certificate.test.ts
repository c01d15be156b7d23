import { createHash, X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from '@jest/globals';
import { fingerprintOfCertificate, parseEdgeFingerprint } from '@iop/wire';
import { derOid, derSmallInteger, derTime } from './der.js';
import { createSelfSignedCertificate } from './self-signed-certificate.js';

describe('der', () => {
  it('encodes object identifiers, integers and times as DER', () => {
    expect(derOid('1.2.840.10045.4.3.2').toString('hex')).toBe('06082a8648ce3d040302');
    expect(derSmallInteger(2).toString('hex')).toBe('020102');
    expect(derSmallInteger(128).toString('hex')).toBe('02020080');
    expect(derTime(new Date('2026-01-02T03:04:05Z')).toString('ascii').slice(2)).toBe('260102030405Z');
    expect(derTime(new Date('2051-01-02T03:04:05Z'))[0]).toBe(0x18);
  });
});

describe('createSelfSignedCertificate', () => {
  const made = createSelfSignedCertificate({
    commonName: 'iop-edge test',
    hosts: ['edge.example.test', '192.0.2.10', '[2001:db8::1]', '127.0.0.1', 'localhost'],
    now: new Date('2026-06-01T00:00:00Z'),
  });

  it('is an ECDSA P-256 certificate with the SANs, serverAuth and a ten-year validity', () => {
    const certificate = new X509Certificate(made.certificatePem);
    expect(certificate.publicKey.asymmetricKeyType).toBe('ec');
    expect(certificate.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(certificate.subjectAltName).toBe(
      'DNS:edge.example.test, IP Address:192.0.2.10, IP Address:2001:DB8:0:0:0:0:0:1, IP Address:127.0.0.1, DNS:localhost',
    );
    expect(certificate.subject).toContain('CN=iop-edge test');
    expect(certificate.issuer).toBe(certificate.subject);
    expect(certificate.checkHost('edge.example.test')).toBe('edge.example.test');
    expect(certificate.checkIP('192.0.2.10')).toBe('192.0.2.10');
    expect(certificate.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(certificate.ca).toBe(false);
    expect(new Date(certificate.validFrom).toISOString()).toBe('2026-05-31T23:00:00.000Z');
    expect(new Date(certificate.validTo).toISOString()).toBe('2036-05-28T23:00:00.000Z');
    expect(certificate.verify(certificate.publicKey)).toBe(true);
  });

  it('reports the SHA-256 of the SubjectPublicKeyInfo as its fingerprint', () => {
    const certificate = new X509Certificate(made.certificatePem);
    const spki = certificate.publicKey.export({ type: 'spki', format: 'der' });
    expect(made.fingerprint).toBe(`sha256:${createHash('sha256').update(spki).digest('hex')}`);
    expect(fingerprintOfCertificate(made.certificatePem)).toBe(made.fingerprint);
    expect(parseEdgeFingerprint(made.fingerprint.toUpperCase().replace('SHA256', 'sha256'))).toBe(
      made.fingerprint,
    );
    expect(parseEdgeFingerprint('sha256:abc')).toBeUndefined();
  });

  it('refuses hosts that cannot be a subjectAltName', () => {
    expect(() => createSelfSignedCertificate({ commonName: 'x', hosts: ['bad host'] })).toThrow(
      "not a host name or IP address: 'bad host'",
    );
    expect(() => createSelfSignedCertificate({ commonName: 'x', hosts: [] })).toThrow('at least one host');
  });

  it('serves a real TLS handshake that a client trusting the certificate verifies by name', async () => {
    const fresh = createSelfSignedCertificate({
      commonName: 'iop-edge test',
      hosts: ['localhost', '127.0.0.1'],
    });
    const server = tls.createServer(
      { cert: fresh.certificatePem, key: fresh.privateKeyPem, minVersion: 'TLSv1.2' },
      (socket) => socket.end('hello'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const received = await new Promise<{ text: string; fingerprint: string }>((resolve, reject) => {
        const socket = tls.connect({
          host: '127.0.0.1',
          port,
          ca: fresh.certificatePem,
          servername: 'localhost',
        });
        let text = '';
        let fingerprint = '';
        socket.on('secureConnect', () => {
          fingerprint = fingerprintOfCertificate(socket.getPeerX509Certificate()!);
        });
        socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
        socket.on('end', () => resolve({ text, fingerprint }));
        socket.on('error', reject);
      });
      expect(received).toEqual({ text: 'hello', fingerprint: fresh.fingerprint });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
