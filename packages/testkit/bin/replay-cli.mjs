#!/usr/bin/env node
// Replays a recorded CLI transcript (packages/testkit/transcripts/<cli>/*.jsonl) as if it were the real CLI, so
// adapter tests need no real coding agent. Every other argument is accepted and ignored, like the real flags.
//
//   replay-cli.mjs --transcript FILE   print FILE's lines on stdout
//                  --record FILE       append {argv, stdin, cwd, pid} as one JSON line (what the adapter passed)
//                  --line-delay-ms N   pause between lines
//                  --hang              stay alive after the last line (a CLI that printed its result but hangs)
//                  --exit-code N       exit code after the last line (default 0)
//                  --stderr TEXT       print TEXT on stderr first
//                  --spawn-child       start a child in the same process group that outlives us
// Without --transcript, the file named by IOP_REPLAY_TRANSCRIPT is replayed (for fixed-argument calls such as a
// CLI's usage command).
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
// The last occurrence wins, so appended resume_args can name another transcript.
const option = (name) => {
  const index = argv.lastIndexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
};
const transcript = option('--transcript') ?? process.env.IOP_REPLAY_TRANSCRIPT;
const record = option('--record');
const lineDelayMs = Number(option('--line-delay-ms') ?? 0);
const exitCode = Number(option('--exit-code') ?? 0);
const stderrText = option('--stderr');
const hang = argv.includes('--hang');

if (argv.includes('--spawn-child')) {
  spawn(process.execPath, ['-e', "process.on('SIGHUP',()=>{});setInterval(()=>{},1000)"], {
    stdio: 'ignore',
  }).unref();
}

// Read whatever the adapter sends on stdin (the prompt for stdin-prompt CLIs), but never wait long for it.
const stdin = await new Promise((resolve) => {
  let text = '';
  const done = () => resolve(text);
  const timer = setTimeout(done, 1500);
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => (text += chunk));
  process.stdin.on('end', () => {
    clearTimeout(timer);
    done();
  });
  process.stdin.on('error', () => {
    clearTimeout(timer);
    done();
  });
});
process.stdin.pause();

if (record)
  appendFileSync(record, `${JSON.stringify({ argv, stdin, cwd: process.cwd(), pid: process.pid })}\n`);
if (stderrText) process.stderr.write(`${stderrText}\n`);

const lines = transcript
  ? readFileSync(transcript, 'utf8')
      .split('\n')
      .filter((line) => line.length > 0)
  : [];
for (const line of lines) {
  process.stdout.write(`${line}\n`);
  if (lineDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, lineDelayMs));
}
if (hang) {
  setInterval(() => {}, 60_000);
} else {
  process.exitCode = exitCode;
}
