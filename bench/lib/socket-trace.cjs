// Preloaded into a benchmarked process (`node --require bench/lib/socket-trace.cjs ...`, see bench/ttft-timeline.mjs)
// to record, with wall-clock timestamps every process shares (performance.timeOrigin + performance.now(), epoch
// ms), each socket read ('data' events), socket write (single or writev, with the number of buffers) and HTTP
// request an http.Server emits, tagged `<local port>><remote port>`. Written as JSON to
// `$IOP_TRACE_DIR/<pid>.json` on SIGUSR2 (recording restarts then). Diagnostics only: it wraps net.Socket and
// http.Server methods, so it must never be part of a product build.
'use strict';
const net = require('node:net');
const http = require('node:http');
const { writeFileSync } = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const now = () => performance.timeOrigin + performance.now();
let records = [];
const tag = (socket) => `${socket.localPort ?? '?'}>${socket.remotePort ?? '?'}`;

const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function traced(event, chunk) {
  if (event === 'data') records.push([now(), 'read', tag(this), chunk.length]);
  return emit.apply(this, arguments);
};
const writeGeneric = net.Socket.prototype._writeGeneric;
net.Socket.prototype._writeGeneric = function traced(writev, data) {
  records.push([now(), writev ? 'writev' : 'write', tag(this), data.length]);
  return writeGeneric.apply(this, arguments);
};
const serverEmit = http.Server.prototype.emit;
http.Server.prototype.emit = function traced(event, request) {
  if (event === 'request') records.push([now(), 'http-request', tag(request.socket), 0]);
  return serverEmit.apply(this, arguments);
};

process.on('SIGUSR2', () => {
  if (!process.env.IOP_TRACE_DIR) return;
  writeFileSync(path.join(process.env.IOP_TRACE_DIR, `${process.pid}.json`), JSON.stringify(records));
  records = [];
});
