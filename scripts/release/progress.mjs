// Step-by-step progress lines for the release build (`==> [step] what … 1.2 s`), and a small process runner
// that fails with the command's output when it exits non-zero.
import { spawn } from 'node:child_process';

export function step(label) {
  const started = Date.now();
  process.stdout.write(`==> ${label}\n`);
  return {
    done(note = '') {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`    ${note ? `${note}, ` : ''}${seconds} s\n`);
    },
  };
}

export function info(line) {
  process.stdout.write(`    ${line}\n`);
}

/** Runs a command without a shell; rejects with its stderr when it fails. */
export function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve(output);
      else
        reject(
          new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${output.trim()}`),
        );
    });
  });
}
