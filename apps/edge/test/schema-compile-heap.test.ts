// Compiling the edge's schemas must leave V8's empty-object map able to cache new property transitions: when ajv's
// optimizer ran, its per-variable-name objects filled that map's transition table (the 1,536 limit), and until a
// full GC every object built from `{}` with a property not seen before got a map of its own (request headers, JSON
// bodies, option bags), which made the edge's hot path megamorphic. See packages/config/src/create-ajv.ts.
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const registerHooks = path.resolve(here, '../../node/test/support/register-ts.mjs');
const probe = path.join(here, 'support/object-map-probe.ts');

interface ProbeResult {
  before: boolean;
  after: boolean;
  configOk: boolean;
}

function runProbe(): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--allow-natives-syntax', '--import', registerHooks, probe], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`probe exited ${code}: ${stderr.slice(-2000)}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as ProbeResult);
      } catch {
        reject(new Error(`probe printed no result: ${stdout.slice(-500)} ${stderr.slice(-2000)}`));
      }
    });
  });
}

describe('compiling the edge schemas', () => {
  it('leaves new properties on {} sharing one cached map (ajv without its name optimizer)', async () => {
    const result = await runProbe();
    expect(result.configOk).toBe(true);
    expect(result.before).toBe(true);
    expect(result.after).toBe(true);
  }, 90_000);
});
