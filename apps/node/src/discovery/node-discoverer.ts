// One discovery pass: every probe at once, each bounded by its own deadline, so a pass takes about as long as
// the slowest single probe (never longer than the exec deadline plus the HTTP deadline). What it looks at is
// fixed: Ollama at OLLAMA_HOST, OpenAI-compatible servers at the configured URLs and the loopback ports, the
// known CLIs on PATH (`--version` only) and the host. A probe that fails or times out just finds nothing, and
// says why in the log: every failure at debug; at warn, for servers the operator named (OLLAMA_HOST, discovery
// openai_compat_urls), the first failure and each change of its cause; the usual loopback ports and Ollama's
// default address stay at debug (nothing listening there is the normal case). A named server answering again
// after a failure is logged at info.
import type { Logger } from '@iop/logging';
import type { DiscoveredBackend, DiscoverySettings, NodeDiscovery } from '@iop/wire';
import type { HealthCause } from '../adapters/adapter.js';
import {
  DEFAULT_LOCAL_PORTS,
  ollamaBaseUrl,
  openAICompatBaseUrl,
  probeOllama,
  probeOpenAICompat,
} from './backend-probes.js';
import { probeClis } from './cli-probe.js';
import { probeHost } from './host-probe.js';
import type { ProbeFailure } from './fetch-json.js';
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
  /** Where probe failures are logged (see the header); none = not logged. */
  logger?: Pick<Logger, 'debug' | 'info' | 'warn'>;
}

interface Target {
  baseUrl: string;
  portHint?: number;
  /** Named by the operator (OLLAMA_HOST, openai_compat_urls): its failures are worth a warning. */
  named: boolean;
}

export class NodeDiscoverer {
  readonly #options: NodeDiscovererOptions;
  /** The cause of the last failed probe per named base URL, for logging changes only. */
  readonly #failing = new Map<string, HealthCause>();

  constructor(options: NodeDiscovererOptions) {
    this.#options = options;
  }

  /** Runs one pass. `settings` undefined (an edge that sends none) = built-in ports, no extra URLs. */
  async discover(settings: DiscoverySettings | undefined, signal: AbortSignal): Promise<NodeDiscovery> {
    const { deps } = this.#options;
    const httpTimeoutMs = this.#options.httpTimeoutMs ?? DEFAULT_HTTP_PROBE_TIMEOUT_MS;
    const execTimeoutMs = this.#options.execTimeoutMs ?? DEFAULT_EXEC_PROBE_TIMEOUT_MS;
    const http = { http: deps.http, timeoutMs: httpTimeoutMs, signal };

    let ollamaUrl: string | undefined;
    try {
      ollamaUrl = ollamaBaseUrl(deps.env['OLLAMA_HOST']);
    } catch {
      this.#options.warn?.(
        `OLLAMA_HOST '${deps.env['OLLAMA_HOST'] ?? ''}' is not an address; Ollama not probed`,
      );
    }
    const targets = this.#openAITargets(settings, ollamaUrl);
    const ollamaNamed = (deps.env['OLLAMA_HOST'] ?? '').trim() !== '';
    const probe = <T>(target: Target, run: (onFailure: (failure: ProbeFailure) => void) => Promise<T>) => {
      let failure: ProbeFailure | undefined;
      return run((reported) => (failure ??= reported)).then((found) => {
        if (!signal.aborted) this.#logProbe(target, found === undefined ? failure : undefined);
        return found;
      });
    };
    const [ollama, servers, clis, host] = await Promise.all([
      ollamaUrl
        ? probe({ baseUrl: ollamaUrl, named: ollamaNamed }, (onFailure) =>
            probeOllama(ollamaUrl, { ...http, onFailure }),
          )
        : Promise.resolve(undefined),
      Promise.all(
        targets.map((target) =>
          probe(target, (onFailure) =>
            probeOpenAICompat(target.baseUrl, { ...http, portHint: target.portHint, onFailure }),
          ),
        ),
      ),
      probeClis(deps, { timeoutMs: execTimeoutMs, signal }),
      probeHost(deps, { timeoutMs: execTimeoutMs, signal }),
    ]);
    const backends: DiscoveredBackend[] = [];
    if (ollama) backends.push(ollama);
    for (const server of servers) if (server) backends.push(server);
    return { backends, clis, host, discoveredAtUnixMs: this.#options.now() };
  }

  /** Logs one probe's outcome: `failure` undefined = it found a server (see the header for the levels). */
  #logProbe(target: Target, failure: ProbeFailure | undefined): void {
    const logger = this.#options.logger;
    const previous = this.#failing.get(target.baseUrl);
    if (failure === undefined) {
      if (previous !== undefined) {
        this.#failing.delete(target.baseUrl);
        logger?.info({ baseUrl: target.baseUrl, previousCause: previous }, 'discovery probe answers again');
      }
      return;
    }
    const fields = {
      baseUrl: target.baseUrl,
      url: failure.url,
      cause: failure.cause,
      detail: failure.detail,
    };
    logger?.debug(fields, 'discovery probe found nothing');
    if (!target.named) return;
    this.#failing.set(target.baseUrl, failure.cause);
    if (previous !== failure.cause) {
      logger?.warn(
        fields,
        `discovery: nothing usable at ${target.baseUrl}: ${failure.cause} (${failure.detail})`,
      );
    }
  }

  /** Configured URLs first, then the loopback ports; one probe per base URL, never Ollama's own address. */
  #openAITargets(settings: DiscoverySettings | undefined, ollamaUrl: string | undefined): Target[] {
    const seen = new Set<string>();
    if (ollamaUrl) seen.add(`${ollamaUrl}/v1`);
    const targets: Target[] = [];
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
      targets.push({ baseUrl, named: true });
    }
    for (const port of settings ? settings.localPorts : DEFAULT_LOCAL_PORTS) {
      const baseUrl = `http://127.0.0.1:${port}/v1`;
      if (seen.has(baseUrl)) continue;
      seen.add(baseUrl);
      targets.push({ baseUrl, portHint: port, named: false });
    }
    return targets;
  }
}
