// One discovery pass: every probe at once, each bounded by its own deadline, so a pass takes about as long as
// the slowest single probe (never longer than the exec deadline plus the HTTP deadline). What it looks at is
// fixed: Ollama at OLLAMA_HOST, OpenAI-compatible servers at the configured URLs and the loopback ports, the
// known CLIs on PATH (`--version` only) and the host. A probe that fails or times out just finds nothing.
import type { DiscoveredBackend, DiscoverySettings, NodeDiscovery } from '@iop/wire';
import {
  DEFAULT_LOCAL_PORTS,
  ollamaBaseUrl,
  openAICompatBaseUrl,
  probeOllama,
  probeOpenAICompat,
} from './backend-probes.js';
import { probeClis } from './cli-probe.js';
import { probeHost } from './host-probe.js';
import type { ProbeDeps } from './probe-deps.js';

export const DEFAULT_HTTP_PROBE_TIMEOUT_MS = 1500;
export const DEFAULT_EXEC_PROBE_TIMEOUT_MS = 3000;

export interface NodeDiscovererOptions {
  deps: ProbeDeps;
  now: () => number;
  /** Deadline of each HTTP request. */
  httpTimeoutMs?: number;
  /** Deadline of each executed `--version` / `nvidia-smi` / `sysctl`. */
  execTimeoutMs?: number;
  /** Warnings about unusable settings (a configured URL that is not a URL). */
  warn?: (message: string) => void;
}

export class NodeDiscoverer {
  readonly #options: NodeDiscovererOptions;

  constructor(options: NodeDiscovererOptions) {
    this.#options = options;
  }

  /** Runs one pass. `settings` undefined (an edge that sends none) = built-in ports, no extra URLs. */
  async discover(settings: DiscoverySettings | undefined, signal: AbortSignal): Promise<NodeDiscovery> {
    const { deps } = this.#options;
    const httpTimeoutMs = this.#options.httpTimeoutMs ?? DEFAULT_HTTP_PROBE_TIMEOUT_MS;
    const execTimeoutMs = this.#options.execTimeoutMs ?? DEFAULT_EXEC_PROBE_TIMEOUT_MS;
    const http = { fetch: deps.fetch, timeoutMs: httpTimeoutMs, signal };

    let ollamaUrl: string | undefined;
    try {
      ollamaUrl = ollamaBaseUrl(deps.env['OLLAMA_HOST']);
    } catch {
      this.#options.warn?.(
        `OLLAMA_HOST '${deps.env['OLLAMA_HOST'] ?? ''}' is not an address; Ollama not probed`,
      );
    }
    const targets = this.#openAITargets(settings, ollamaUrl);
    const [ollama, servers, clis, host] = await Promise.all([
      ollamaUrl ? probeOllama(ollamaUrl, http) : Promise.resolve(undefined),
      Promise.all(
        targets.map((target) => probeOpenAICompat(target.baseUrl, { ...http, portHint: target.portHint })),
      ),
      probeClis(deps, { timeoutMs: execTimeoutMs, signal }),
      probeHost(deps, { timeoutMs: execTimeoutMs, signal }),
    ]);
    const backends: DiscoveredBackend[] = [];
    if (ollama) backends.push(ollama);
    for (const server of servers) if (server) backends.push(server);
    return { backends, clis, host, discoveredAtUnixMs: this.#options.now() };
  }

  /** Configured URLs first, then the loopback ports; one probe per base URL, never Ollama's own address. */
  #openAITargets(
    settings: DiscoverySettings | undefined,
    ollamaUrl: string | undefined,
  ): { baseUrl: string; portHint?: number }[] {
    const seen = new Set<string>();
    if (ollamaUrl) seen.add(`${ollamaUrl}/v1`);
    const targets: { baseUrl: string; portHint?: number }[] = [];
    for (const url of settings?.openaiCompatUrls ?? []) {
      let baseUrl: string;
      try {
        baseUrl = openAICompatBaseUrl(url);
      } catch {
        this.#options.warn?.(`discovery URL '${url}' is not a URL; skipped`);
        continue;
      }
      if (seen.has(baseUrl)) continue;
      seen.add(baseUrl);
      targets.push({ baseUrl });
    }
    for (const port of settings ? settings.localPorts : DEFAULT_LOCAL_PORTS) {
      const baseUrl = `http://127.0.0.1:${port}/v1`;
      if (seen.has(baseUrl)) continue;
      seen.add(baseUrl);
      targets.push({ baseUrl, portHint: port });
    }
    return targets;
  }
}
