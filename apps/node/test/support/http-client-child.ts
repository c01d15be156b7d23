// Child process for the HTTP client's lifecycle test: requests from the server given as argv[2] (one body read to
// its end, one left with discard() and one with cancel()), prints `done` and returns without closing the client.
// Its idle pooled sockets must not keep it alive: the parent checks that it exits at once.
import { systemClock } from '@iop/clock';
import { createNodeHttpClient } from '../../src/adapters/http/node-http-client.js';

const url = process.argv[2];
if (!url) throw new Error('usage: http-client-child <url>');
const client = createNodeHttpClient({ clock: systemClock });
const signal = new AbortController().signal;
for (let index = 0; index < 3; index += 1) {
  const response = await client.request(`${url}/whole`, { method: 'GET', headers: {}, signal });
  for await (const chunk of response.body) void chunk;
}
const drained = await client.request(`${url}/stream`, { method: 'GET', headers: {}, signal });
drained.discard();
const cancelled = await client.request(`${url}/stream`, { method: 'GET', headers: {}, signal });
cancelled.cancel();
process.stdout.write(`done ${client.connectionsOpened}\n`);
