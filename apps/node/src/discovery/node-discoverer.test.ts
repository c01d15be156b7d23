import { describe, expect, it } from '@jest/globals';
import { NodeDiscoverer } from './node-discoverer.js';
import { fakeProbeDeps } from './test-support/fake-probe-deps.js';

const signal = () => new AbortController().signal;

describe('NodeDiscoverer', () => {
  it('finds Ollama at OLLAMA_HOST, servers at configured URLs and ports, CLIs and the host in one pass', async () => {
    const deps = fakeProbeDeps({
      env: { PATH: '/fake/bin', OLLAMA_HOST: '127.0.0.1:31434' },
      http: {
        'http://127.0.0.1:31434/api/version': { version: '0.12.6' },
        'http://127.0.0.1:31434/api/tags': { models: [{ name: 'qwen3:8b' }] },
        'http://127.0.0.1:31434/api/ps': { models: [] },
        'http://10.1.2.3:9000/v1/models': { data: [{ id: 'Qwen/Qwen3-8B', owned_by: 'vllm' }] },
        'http://127.0.0.1:8080/v1/models': { data: [{ id: 'gemma.gguf', owned_by: 'llamacpp' }] },
      },
      executables: { claude: '/bin/claude' },
      exec: { '/bin/claude --version': { stdout: '2.0.14 (Claude Code)' } },
    });
    const discoverer = new NodeDiscoverer({ deps, now: () => 1234 });
    const found = await discoverer.discover(
      { openaiCompatUrls: ['http://10.1.2.3:9000'], localPorts: [8000, 8080] },
      signal(),
    );
    expect(found.backends.map((backend) => [backend.kind, backend.baseUrl, backend.models])).toEqual([
      ['ollama', 'http://127.0.0.1:31434', ['qwen3:8b']],
      ['vllm', 'http://10.1.2.3:9000/v1', ['Qwen/Qwen3-8B']],
      ['llama.cpp', 'http://127.0.0.1:8080/v1', ['gemma.gguf']],
    ]);
    expect(found.clis).toEqual([{ name: 'claude', path: '/bin/claude', version: '2.0.14 (Claude Code)' }]);
    expect(found.host).toMatchObject({ os: 'linux', arch: 'x64', cpuCores: 8 });
    expect(found.discoveredAtUnixMs).toBe(1234);
    // Only loopback, the configured URL and its server's own /version|/health were asked.
    for (const url of deps.fetched) expect(url).toMatch(/^http:\/\/(127\.0\.0\.1:\d+|10\.1\.2\.3:9000)\//);
  });

  it('probes the built-in ports when the edge sends no settings, and each base URL once', async () => {
    const deps = fakeProbeDeps();
    await new NodeDiscoverer({ deps, now: () => 0 }).discover(undefined, signal());
    const listings = deps.fetched.filter((url) => url.endsWith('/v1/models')).sort();
    expect(listings).toEqual([
      'http://127.0.0.1:1234/v1/models',
      'http://127.0.0.1:30000/v1/models',
      'http://127.0.0.1:8000/v1/models',
      'http://127.0.0.1:8080/v1/models',
    ]);
    const again = fakeProbeDeps();
    await new NodeDiscoverer({ deps: again, now: () => 0 }).discover(
      { openaiCompatUrls: ['http://127.0.0.1:8000/v1', 'http://127.0.0.1:8000'], localPorts: [8000] },
      signal(),
    );
    expect(again.fetched.filter((url) => url.endsWith('/v1/models'))).toEqual([
      'http://127.0.0.1:8000/v1/models',
    ]);
  });

  it('skips a configured URL that is not a URL, with a warning', async () => {
    const warnings: string[] = [];
    const deps = fakeProbeDeps();
    await new NodeDiscoverer({ deps, now: () => 0, warn: (message) => warnings.push(message) }).discover(
      { openaiCompatUrls: ['not a url'], localPorts: [] },
      signal(),
    );
    expect(warnings).toEqual(["discovery URL 'not a url' is not a URL; skipped"]);
  });

  it('ends within the probe deadlines when every server accepts and never answers', async () => {
    const deps = fakeProbeDeps({
      env: { PATH: '/fake/bin' },
      http: {
        'http://127.0.0.1:11434/api/tags': 'hang',
        'http://127.0.0.1:11434/api/version': 'hang',
        'http://127.0.0.1:11434/api/ps': 'hang',
        'http://127.0.0.1:8000/v1/models': 'hang',
      },
      executables: { codex: '/bin/codex' },
      exec: { '/bin/codex --version': 'hang' },
    });
    const started = Date.now();
    const found = await new NodeDiscoverer({
      deps,
      now: () => 0,
      httpTimeoutMs: 150,
      execTimeoutMs: 150,
    }).discover({ openaiCompatUrls: [], localPorts: [8000] }, signal());
    expect(Date.now() - started).toBeLessThan(1500);
    expect(found.backends).toEqual([]);
    expect(found.clis).toEqual([{ name: 'codex', path: '/bin/codex', version: '' }]);
  });

  it('logs why a probe found nothing: debug always, warn for named servers on the first failure and each new cause', async () => {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const at = (level: string) => (fields: Record<string, unknown>, message: string) =>
      void lines.push({ level, fields, message });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn') };
    const answers: Record<string, unknown> = {};
    const deps = fakeProbeDeps({ env: { PATH: '/fake/bin', OLLAMA_HOST: '127.0.0.1:31434' }, http: answers });
    const discoverer = new NodeDiscoverer({ deps, now: () => 0, logger });
    const settings = { openaiCompatUrls: ['http://10.1.2.3:9000'], localPorts: [8000] };
    const pass = async () => {
      lines.length = 0;
      await discoverer.discover(settings, signal());
      return lines.map((line) => [line.level, line.fields['baseUrl'], line.fields['cause']]).sort();
    };
    // Nothing answers: both named servers warn (connection refused), the default port only at debug.
    expect(await pass()).toEqual([
      ['debug', 'http://10.1.2.3:9000/v1', 'connection_refused'],
      ['debug', 'http://127.0.0.1:31434', 'connection_refused'],
      ['debug', 'http://127.0.0.1:8000/v1', 'connection_refused'],
      ['warn', 'http://10.1.2.3:9000/v1', 'connection_refused'],
      ['warn', 'http://127.0.0.1:31434', 'connection_refused'],
    ]);
    expect(
      lines.find((line) => line.level === 'warn' && line.fields['baseUrl'] === 'http://10.1.2.3:9000/v1'),
    ).toMatchObject({
      message: expect.stringMatching(
        /^discovery: nothing usable at http:\/\/10\.1\.2\.3:9000\/v1: connection_refused \(.*ECONNREFUSED 10\.1\.2\.3:9000.*\)$/,
      ) as unknown as string,
      fields: { url: 'http://10.1.2.3:9000/v1/models' },
    });
    // The same again: debug only.
    expect((await pass()).filter(([level]) => level !== 'debug')).toEqual([]);
    // The vLLM server now answers 404, Ollama answers: a new cause warns, a recovery is info.
    answers['http://10.1.2.3:9000/v1/models'] = { status: 404, body: 'not found' };
    answers['http://127.0.0.1:31434/api/tags'] = { models: [{ name: 'qwen3:8b' }] };
    expect((await pass()).filter(([level]) => level !== 'debug')).toEqual([
      ['info', 'http://127.0.0.1:31434', undefined],
      ['warn', 'http://10.1.2.3:9000/v1', 'http_status'],
    ]);
    expect(lines.find((line) => line.level === 'warn')?.fields['detail']).toBe('HTTP 404');
  });
});
