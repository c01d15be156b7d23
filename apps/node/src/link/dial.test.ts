import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { envelope, fingerprintOfCertificate, FramedConnection } from '@iop/wire';
import { createDialer, parseEdgeAddress } from './dial.js';
import { LinkError } from './link-error.js';

describe('parseEdgeAddress', () => {
  it('accepts host:port and [v6]:port', () => {
    expect(parseEdgeAddress('127.0.0.1:19090')).toEqual({ host: '127.0.0.1', port: 19090 });
    expect(parseEdgeAddress('edge.example.com:1')).toEqual({ host: 'edge.example.com', port: 1 });
    expect(parseEdgeAddress('[::1]:443')).toEqual({ host: '::1', port: 443 });
  });

  it.each(['edge', 'edge:', ':80', 'edge:0', 'edge:70000', 'edge:http', '::1:80'])('rejects %s', (value) => {
    expect(() => parseEdgeAddress(value)).toThrow(/is not HOST:PORT/);
  });
});

describe('createDialer over TLS', () => {
  let dir: string;
  let server: tls.Server;
  let port: number;
  let cert: Buffer;
  const received: string[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-dial-'));
    // A throwaway self-signed certificate for 127.0.0.1 (openssl is part of the build image).
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = fs.readFileSync(path.join(dir, 'cert.pem'));
    server = tls.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert }, (socket) => {
      const connection = new FramedConnection(socket);
      void (async () => {
        try {
          for await (const message of connection.messages()) received.push(message.msg?.$case ?? 'none');
        } catch {
          // Clients that fail verification drop the socket; nothing to record.
        }
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    port = (server.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('connects with --tls-ca and carries frames', async () => {
    const connection = await createDialer({ host: '127.0.0.1', port, tls: { ca: cert } })(
      new AbortController().signal,
    );
    await connection.send(envelope.heartbeatPing(1));
    const deadline = Date.now() + 2000;
    while (!received.includes('heartbeatPing') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(received).toContain('heartbeatPing');
    await connection.close('test');
  });

  it('refuses an edge certificate it cannot verify with connect_failed', async () => {
    const dial = createDialer({ host: '127.0.0.1', port, tls: {} });
    await expect(dial(new AbortController().signal)).rejects.toMatchObject({ code: 'connect_failed' });
  });

  it('with a pinned fingerprint, connects to the self-signed edge without a CA', async () => {
    const fingerprint = fingerprintOfCertificate(cert);
    const connection = await createDialer({ host: '127.0.0.1', port, tls: { fingerprint } })(
      new AbortController().signal,
    );
    await connection.close('test');
  });

  it('refuses an edge whose key does not match the pin, naming both fingerprints, before sending a byte', async () => {
    const before = received.length;
    const pinned = `sha256:${'0'.repeat(64)}`;
    const dial = createDialer({ host: '127.0.0.1', port, tls: { fingerprint: pinned } });
    const failure = dial(new AbortController().signal);
    await expect(failure).rejects.toMatchObject({
      code: 'edge_identity_mismatch',
      transient: false,
      message: expect.stringContaining(`expected ${pinned}, it presented ${fingerprintOfCertificate(cert)}`),
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received.length).toBe(before);
  });

  it('fails with connect_failed when aborted or refused', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(createDialer({ host: '127.0.0.1', port })(controller.signal)).rejects.toBeInstanceOf(
      LinkError,
    );
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const freePort = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(
      createDialer({ host: '127.0.0.1', port: freePort })(new AbortController().signal),
    ).rejects.toMatchObject({ code: 'connect_failed', message: expect.stringContaining('ECONNREFUSED') });
  });
});
