#!/usr/bin/env node
// A stand-in for `opencode serve` that replays recorded /event SSE streams
// (packages/testkit/transcripts/opencode/serve-*-events.jsonl), one file per prompt, in order. It answers the
// HTTP calls the cli adapter makes: GET /global/health, POST /session, GET /event, POST
// /session/{id}/prompt_async, POST /session/{id}/abort. Recorded session ids are rewritten to the one this
// server hands out. Usage:
//   replay-opencode-serve.mjs serve --port P [--hostname H] --events F1,F2,... [--record FILE] [--stall]
// --stall: after the first recorded delta of a turn, stop until /abort (for cancel tests).
// --hang-start-once MARKER: when MARKER does not exist, write this process's pid to it and never start listening
//   (a cold start that hangs: the test kills it or lets the start time out); later starts run normally.
// --slow-start-ms N: wait N ms before listening (a cold start a caller can cancel).
// Like the real server, every request needs HTTP basic auth when OPENCODE_SERVER_PASSWORD is set (user
// OPENCODE_SERVER_USERNAME, default `opencode`); others get 401.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';

const argv = process.argv.slice(2);
const option = (name) => {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
};
const port = Number(option('--port') ?? 0);
const host = option('--hostname') ?? '127.0.0.1';
const files = (option('--events') ?? '').split(',').filter(Boolean);
const record = option('--record');
const stall = argv.includes('--stall');
const sessionId = 'ses_replay0000000000000001';
const streams = new Set();
let turn = 0;
let aborted = false;

const log = (entry) => {
  if (record) appendFileSync(record, `${JSON.stringify(entry)}\n`);
};

function recordedEvents(file) {
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const original = lines.map((line) => JSON.parse(line)).find((event) => event.properties?.sessionID)
    ?.properties.sessionID;
  return lines.map((line) => (original ? line.split(original).join(sessionId) : line));
}

async function play(file) {
  aborted = false;
  let sentDelta = false;
  for (const data of recordedEvents(file)) {
    if (aborted) break;
    if (stall && sentDelta) {
      while (!aborted) await new Promise((resolve) => setTimeout(resolve, 20));
      break;
    }
    for (const stream of streams) stream.write(`data: ${data}\n\n`);
    if (data.includes('"message.part.delta"')) sentDelta = true;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (aborted) {
    const idle = JSON.stringify({ type: 'session.idle', properties: { sessionID: sessionId } });
    for (const stream of streams) stream.write(`data: ${idle}\n\n`);
  }
}

const password = process.env.OPENCODE_SERVER_PASSWORD ?? '';
const expectedAuthorization = password
  ? `Basic ${Buffer.from(`${process.env.OPENCODE_SERVER_USERNAME || 'opencode'}:${password}`).toString('base64')}`
  : undefined;

const hangMarker = option('--hang-start-once');
if (hangMarker && !existsSync(hangMarker)) {
  writeFileSync(hangMarker, `${process.pid}\n`);
  setInterval(() => undefined, 60_000);
  await new Promise(() => undefined);
}
const slowStartMs = Number(option('--slow-start-ms') ?? 0);
if (slowStartMs > 0) await new Promise((resolve) => setTimeout(resolve, slowStartMs));

const server = http.createServer((request, response) => {
  if (expectedAuthorization && request.headers.authorization !== expectedAuthorization) {
    log({ method: request.method, url: request.url, unauthorized: true });
    response.writeHead(401, { 'www-authenticate': 'Basic' }).end();
    request.resume();
    return;
  }
  let body = '';
  request.on('data', (chunk) => (body += chunk));
  request.on('end', () => {
    const url = request.url ?? '/';
    log({ method: request.method, url, body: body ? JSON.parse(body) : undefined });
    if (url === '/global/health') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"healthy":true}');
    } else if (url === '/session' && request.method === 'POST') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: sessionId }));
    } else if (url === '/event') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${JSON.stringify({ type: 'server.connected', properties: {} })}\n\n`);
      streams.add(response);
      response.on('close', () => streams.delete(response));
    } else if (url === `/session/${sessionId}/prompt_async`) {
      response.writeHead(204).end();
      const file = files[Math.min(turn, files.length - 1)];
      turn += 1;
      if (file) void play(file);
    } else if (url === `/session/${sessionId}/abort`) {
      aborted = true;
      response.writeHead(200, { 'content-type': 'application/json' }).end('true');
    } else {
      response.writeHead(404).end();
    }
  });
});
server.listen(port, host, () => log({ listening: server.address().port, auth: Boolean(password) }));
process.on('SIGTERM', () => process.exit(0));
