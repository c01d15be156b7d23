// Measures framing throughput on this machine (run after `pnpm build`): decoding coalesced and socket-sized
// reads, encoding, and a loopback FramedConnection. Prints one line per measurement; not part of the test suite.
import net from 'node:net';
import { FrameDecoder, FramedConnection, encodeFrame, envelope, toWireRunEvent } from '../dist/index.js';

const FRAMES = Number(process.env.BENCH_FRAMES ?? 200_000);

function textDelta(seq) {
  return envelope.runEvent(
    toWireRunEvent('run-0123456789', seq, { type: 'text-delta', text: 'token ' }, 1_700_000_000_000),
  );
}

function report(name, frames, bytes, ms) {
  const perSecond = Math.round((frames / ms) * 1000);
  const mbPerSecond = ((bytes / ms) * 1000) / (1024 * 1024);
  console.log(
    `${name}: ${frames} frames, ${bytes} bytes in ${ms.toFixed(1)} ms = ${perSecond} frames/s, ${mbPerSecond.toFixed(1)} MiB/s`,
  );
}

const frames = Array.from({ length: FRAMES }, (_, seq) => encodeFrame(textDelta(seq)));
const stream = Buffer.concat(frames);

{
  const started = performance.now();
  for (let seq = 0; seq < FRAMES; seq += 1) encodeFrame(textDelta(seq));
  report('encode text-delta', FRAMES, stream.length, performance.now() - started);
}

{
  const decoder = new FrameDecoder();
  const started = performance.now();
  let count = 0;
  decoder.pushEach(stream, () => (count += 1));
  report('decode one coalesced buffer', count, stream.length, performance.now() - started);
}

{
  const decoder = new FrameDecoder();
  const chunks = [];
  for (let offset = 0; offset < stream.length; offset += 65_536)
    chunks.push(stream.subarray(offset, offset + 65_536));
  const started = performance.now();
  let count = 0;
  for (const chunk of chunks) decoder.pushEach(chunk, () => (count += 1));
  report('decode 64 KiB reads', count, stream.length, performance.now() - started);
}

{
  const big = encodeFrame(envelope.goodbye('x', 'y'.repeat(8 * 1024 * 1024)));
  const decoder = new FrameDecoder();
  const started = performance.now();
  let count = 0;
  for (let round = 0; round < 10; round += 1) {
    for (let offset = 0; offset < big.length; offset += 65_536)
      decoder.pushEach(big.subarray(offset, offset + 65_536), () => (count += 1));
  }
  report('decode 8 MiB frames in 64 KiB reads', count, big.length * 10, performance.now() - started);
}

{
  const listener = net.createServer();
  await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise((resolve) => listener.once('connection', resolve));
  const clientSocket = net.connect(listener.address().port, '127.0.0.1');
  await new Promise((resolve) => clientSocket.once('connect', resolve));
  const serverSocket = await accepted;
  listener.close();
  const client = new FramedConnection(clientSocket);
  const server = new FramedConnection(serverSocket);
  const started = performance.now();
  const receiving = (async () => {
    let count = 0;
    for await (const _message of server.messages()) {
      count += 1;
      if (count === FRAMES) break;
    }
    return count;
  })();
  const sends = [];
  for (let seq = 0; seq < FRAMES; seq += 1) sends.push(client.send(textDelta(seq)));
  await Promise.all(sends);
  const count = await receiving;
  report('loopback FramedConnection text-delta', count, stream.length, performance.now() - started);
  await Promise.all([client.close('bench-done'), server.close('bench-done')]);
}
