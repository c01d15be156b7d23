#!/usr/bin/env node
// A persistent fake coding agent for IOP tests and the local console demo. It reads one prompt per stdin line
// and answers each with two lines: the first `iop_\w+` token of the prompt upper-cased plus `_OK`, then plus
// `_TAIL` (`ECHO_OK` / `ECHO_TAIL` without a token), then stays silent and alive like a real interactive agent.
// Like a real agent it remembers its conversation (this process's lifetime = one logical session): a prompt
// containing `remember codeword <WORD>` stores the word, and a prompt asking `codeword?` first answers
// `CODEWORD <WORD>` (`CODEWORD NONE` when this session was never told one); `where are you?` answers
// `CWD <working directory>` (the session's workspace). Session-isolation tests read these lines.
//
// Flags (for tests of the session core):
//   --delay-ms N            wait N ms before answering (SIGINT during the wait drops the answer: "interrupt")
//   --exit-after N          exit 0 after answering N prompts
//   --ignore-sigterm        survive SIGTERM (only SIGKILL ends it)
//   --spawn-child           start a child process that would outlive this one (same process group)
//   --child-pid-file PATH   write the child's pid there (with --spawn-child)
//   --pid-file PATH         write this process's pid there
//   --version               print `fake-cli 0.0.0-fake` and exit (a prompt that became a flag shows up as this)
//   --long-line-bytes N     one-shot: print one line of N bytes ('x'), then exit 0 (output-bound tests)
//   -- PROMPT               one-shot: answer PROMPT from the command line (`PROMPT: <text>` then the usual two
//                           lines) and exit 0, instead of reading stdin
//   --model-calls N         one-shot agent on the fabric (issue 42): read the prompt (after `--`, else stdin), make N
//                           chat calls to the model endpoint in env IOP_MODEL_BASE_URL (OpenAI style, ending in /v1)
//                           with the key IOP_MODEL_API_KEY and model IOP_MODEL — odd calls streamed (SSE), even ones
//                           not — and print `MODEL_ENDPOINT <base url> <key>`, then per call
//                           `MODEL_CALL <i> <status> <text or error message>`, then `MODEL_CALLS_DONE`; exit 0.
//                           A prompt containing `use-key <KEY>` uses that key instead (stale-secret tests).
//   --think-ms N            with --model-calls: wait N ms before each call after the first (the agent "thinking" or
//                           running a tool between model calls; default 0, calls back to back)
//   --call-timings          with --model-calls: after each MODEL_CALL line also print
//                           `MODEL_CALL_MS <i> <ms from sending to the whole answer>` (bench/lib/agent-fabric-phase.mjs)
//   --fail-on-model-error   with --model-calls: a call answered with an error status (or not answered) ends the
//                           agent like a real one whose model failed: after its MODEL_CALL line, print
//                           `fake-cli: model call <i> failed: <status> <code>: <message>` on stderr and exit 1
//                           (no further calls, no MODEL_CALLS_DONE)
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const options = parseArgs(process.argv.slice(2));
if (options.version) {
  process.stdout.write('fake-cli 0.0.0-fake\n');
  process.exit(0);
}
if (options.longLineBytes > 0) {
  await writeLongLine(options.longLineBytes);
  process.exit(0);
}
if (options.modelCalls > 0) {
  await modelCalls(options.modelCalls, options.argvPrompt ?? (await readAll(process.stdin)));
  process.exit(0);
}
if (options.argvPrompt !== undefined) {
  const match = /iop_\w+/i.exec(options.argvPrompt);
  const token = match ? match[0].toUpperCase() : 'ECHO';
  process.stdout.write(`PROMPT: ${options.argvPrompt}\n${token}_OK\n${token}_TAIL\n`, () => process.exit(0));
  await new Promise(() => undefined);
}
let answered = 0;
const pending = new Set();
/** The codeword this session was told to remember (its conversation memory). */
let codeword;

if (options.spawnChild) {
  // A plain child in our process group that ignores SIGHUP and keeps running after we die: only a tree kill
  // (process group or descendant walk) removes it.
  const childCode = options.ignoreSigterm
    ? "process.on('SIGHUP',()=>{});process.on('SIGTERM',()=>{});setInterval(()=>{},1000)"
    : "process.on('SIGHUP',()=>{});setInterval(()=>{},1000)";
  const child = spawn(process.execPath, ['-e', childCode], { stdio: 'ignore' });
  child.unref();
  if (options.childPidFile) writeFileSync(options.childPidFile, `${child.pid}\n`);
}

process.on('SIGINT', () => {
  // Interrupt the current turn, like Ctrl-C in an agent CLI: pending answers are dropped, the process lives on.
  for (const timer of pending) clearTimeout(timer);
  pending.clear();
  process.stderr.write('fake-cli: interrupted\n');
});
process.on('SIGTERM', () => {
  if (options.ignoreSigterm) {
    process.stderr.write('fake-cli: ignoring SIGTERM\n');
    return;
  }
  process.exit(143);
});

const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on('line', (line) => {
  const told = /remember codeword (\S+)/i.exec(line);
  if (told) codeword = told[1];
  const answer = () => {
    const match = /iop_\w+/i.exec(line);
    const token = match ? match[0].toUpperCase() : 'ECHO';
    const recalled = /codeword\?/i.test(line) ? `CODEWORD ${codeword ?? 'NONE'}\n` : '';
    const where = /where are you\?/i.test(line) ? `CWD ${process.cwd()}\n` : '';
    process.stdout.write(`${recalled}${where}${token}_OK\n${token}_TAIL\n`);
    answered += 1;
    if (options.exitAfter > 0 && answered >= options.exitAfter) process.exit(0);
  };
  if (options.delayMs > 0) {
    const timer = setTimeout(() => {
      pending.delete(timer);
      answer();
    }, options.delayMs);
    pending.add(timer);
  } else {
    answer();
  }
});
input.on('close', () => {
  // End of input: finish pending answers, then leave (an agent whose terminal closed).
  const wait = () => (pending.size === 0 ? process.exit(0) : setTimeout(wait, 20));
  wait();
});

// Written last, so a test that waits for it knows the signal handlers are installed.
if (options.pidFile) writeFileSync(options.pidFile, `${process.pid}\n`);

// Keeps the event loop alive while idle (stdin alone may not, e.g. under a closed pty).
setInterval(() => {}, 60_000);

function parseArgs(argv) {
  const parsed = {
    delayMs: 0,
    exitAfter: 0,
    ignoreSigterm: false,
    spawnChild: false,
    childPidFile: '',
    pidFile: '',
    version: false,
    longLineBytes: 0,
    argvPrompt: undefined,
    modelCalls: 0,
    thinkMs: 0,
    callTimings: false,
    failOnModelError: false,
  };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index];
    if (flag === '--') {
      parsed.argvPrompt = argv.slice(index + 1).join(' ');
      break;
    }
    const value = () => {
      const next = argv[index + 1];
      if (next === undefined) fail(`${flag} needs a value`);
      index += 1;
      return next;
    };
    const number = () => {
      const text = value();
      const parsedNumber = Number(text);
      if (!Number.isInteger(parsedNumber) || parsedNumber < 0)
        fail(`${flag} needs a non-negative integer, got ${text}`);
      return parsedNumber;
    };
    switch (flag) {
      case '--delay-ms':
        parsed.delayMs = number();
        break;
      case '--exit-after':
        parsed.exitAfter = number();
        break;
      case '--ignore-sigterm':
        parsed.ignoreSigterm = true;
        break;
      case '--spawn-child':
        parsed.spawnChild = true;
        break;
      case '--child-pid-file':
        parsed.childPidFile = value();
        break;
      case '--pid-file':
        parsed.pidFile = value();
        break;
      case '--version':
        parsed.version = true;
        break;
      case '--long-line-bytes':
        parsed.longLineBytes = number();
        break;
      case '--model-calls':
        parsed.modelCalls = number();
        break;
      case '--think-ms':
        parsed.thinkMs = number();
        break;
      case '--call-timings':
        parsed.callTimings = true;
        break;
      case '--fail-on-model-error':
        parsed.failOnModelError = true;
        break;
      default:
        fail(`unknown flag ${flag}`);
    }
  }
  return parsed;
}

/** Writes `bytes` of 'x' and a newline, honouring stdout backpressure (a paused reader blocks us, as it should). */
async function writeLongLine(bytes) {
  const block = Buffer.alloc(1024 * 1024, 'x');
  let left = bytes;
  while (left > 0) {
    const piece = left >= block.length ? block : block.subarray(0, left);
    left -= piece.length;
    if (!process.stdout.write(piece)) await new Promise((resolve) => process.stdout.once('drain', resolve));
  }
  await new Promise((resolve) => process.stdout.write('\n', resolve));
}

async function readAll(stream) {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  return text.trim();
}

/** The agent's side of the fabric: N chat calls to its run's model endpoint, each answer printed on one line. */
async function modelCalls(count, prompt) {
  const base = process.env.IOP_MODEL_BASE_URL ?? '';
  const model = process.env.IOP_MODEL ?? '';
  const key = /use-key (\S+)/.exec(prompt)?.[1] ?? process.env.IOP_MODEL_API_KEY ?? '';
  await print(`MODEL_ENDPOINT ${base} ${key}\n`);
  for (let index = 1; index <= count; index += 1) {
    if (index > 1 && options.thinkMs > 0)
      await new Promise((resolve) => setTimeout(resolve, options.thinkMs));
    const stream = index % 2 === 1;
    const started = performance.now();
    let line;
    /** Why the call failed (status, code, message); undefined when it was answered. */
    let failure;
    try {
      const response = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          stream,
          messages: [{ role: 'user', content: `call ${index}: ${prompt}` }],
        }),
      });
      const body = await response.text();
      line = `MODEL_CALL ${index} ${response.status} ${oneLine(response.ok ? answerText(body, stream) : errorText(body))}`;
      if (!response.ok) failure = `${response.status} ${errorCode(body)}: ${oneLine(errorText(body))}`;
    } catch (error) {
      const why = oneLine(error?.cause?.code ?? error?.message ?? String(error));
      line = `MODEL_CALL ${index} failed ${why}`;
      failure = `no answer: ${why}`;
    }
    const timing = options.callTimings
      ? `MODEL_CALL_MS ${index} ${(performance.now() - started).toFixed(2)}\n`
      : '';
    await print(`${line}\n${timing}`);
    if (failure !== undefined && options.failOnModelError) {
      await new Promise((resolve) =>
        process.stderr.write(`fake-cli: model call ${index} failed: ${failure}\n`, resolve),
      );
      process.exit(1);
    }
  }
  await print('MODEL_CALLS_DONE\n');
}

function answerText(body, stream) {
  if (!stream) return JSON.parse(body).choices?.[0]?.message?.content ?? '';
  let text = '';
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    text += JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? '';
  }
  return text;
}

function errorCode(body) {
  try {
    return JSON.parse(body).error?.code ?? 'error';
  } catch {
    return 'error';
  }
}

function errorText(body) {
  try {
    return JSON.parse(body).error?.message ?? body;
  } catch {
    return body;
  }
}

function oneLine(text) {
  return String(text).replace(/\s+/g, ' ').trim();
}

function print(text) {
  return new Promise((resolve) => process.stdout.write(text, resolve));
}

function fail(message) {
  process.stderr.write(`fake-cli: ${message}\n`);
  process.exit(2);
}
