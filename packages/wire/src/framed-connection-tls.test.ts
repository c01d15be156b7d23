import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tls from 'node:tls';
import { envelope } from './envelope.js';
import { FramedConnection } from './framed-connection.js';
import type { Envelope } from './messages.js';
import { sampleEnvelopes } from './test-support/sample-envelopes.js';

const tlsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'test-support/tls');
const cert = readFileSync(path.join(tlsDir, 'cert.pem'));
const key = readFileSync(path.join(tlsDir, 'key.pem'));

let server: tls.Server | undefined;
const sockets: tls.TLSSocket[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  server?.close();
  server = undefined;
});

async function tlsPair(): Promise<{ client: tls.TLSSocket; accepted: tls.TLSSocket }> {
  const listener = tls.createServer({ cert, key });
  server = listener;
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as { port: number };
  const accepted = new Promise<tls.TLSSocket>((resolve) => listener.once('secureConnection', resolve));
  const client = tls.connect({ host: '127.0.0.1', port, ca: cert, servername: 'localhost' });
  sockets.push(client);
  await new Promise<void>((resolve, reject) => {
    client.once('secureConnect', resolve);
    client.once('error', reject);
  });
  const serverSide = await accepted;
  sockets.push(serverSide);
  listener.close();
  return { client, accepted: serverSide };
}

describe('FramedConnection over TLS', () => {
  it('carries envelopes and closes with a Goodbye the peer sees', async () => {
    const { client, accepted } = await tlsPair();
    const nodeSide = new FramedConnection(client);
    const edgeSide = new FramedConnection(accepted);
    const received: Envelope[] = [];
    const reading = (async () => {
      for await (const message of edgeSide.messages()) received.push(message);
    })();
    await nodeSide.send(sampleEnvelopes.registerRequest);
    await nodeSide.send(sampleEnvelopes.runRequest);
    await nodeSide.close('shutdown', { goodbye: true, detail: 'bye' });
    await reading;
    expect(received).toEqual([
      sampleEnvelopes.registerRequest,
      sampleEnvelopes.runRequest,
      envelope.goodbye('shutdown', 'bye'),
    ]);
    expect(await edgeSide.closed).toEqual({ reason: 'shutdown', byPeer: true });
    expect(await nodeSide.closed).toEqual({ reason: 'shutdown', byPeer: false });
  });
});
