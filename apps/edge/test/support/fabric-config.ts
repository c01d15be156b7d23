// edge.yaml documents for the e2e suites: nodes whose providers are an `ollama` instance and an
// `openai_compat` (vLLM) instance pointing at fake inference servers, models mapped onto those providers, and
// every listener on 127.0.0.1 (port 0 unless the test pins one, e.g. to restart the edge on the same address).
// Plain data: its JSON text is valid YAML.

import fs from 'node:fs';
import path from 'node:path';

export const FABRIC_TOKEN = 'iop_e2e_fabric_token_0123456789';

/** The cluster fabric key of the e2e suites (what `iop-edge cluster keygen` writes; not a secret). */
export const E2E_FABRIC_KEY = Buffer.alloc(32, 0x5a).toString('base64');

/** Writes the e2e fabric key file (mode 0600) into `dir`, one copy per edge as in a real fabric; its path. */
export function writeFabricKeyFile(dir: string, keys: readonly string[] = [E2E_FABRIC_KEY]): string {
  const file = path.join(dir, 'fabric.key');
  fs.writeFileSync(file, `${keys.join('\n')}\n`, { mode: 0o600 });
  return file;
}

/** Served model names on the fakes, and the catalogue ids clients use. */
export const OLLAMA_SERVED = 'llama3.2:latest';
export const VLLM_SERVED = 'Qwen/Qwen3-8B';
export const MODEL_LLAMA = 'e2e-llama';
export const MODEL_QWEN = 'e2e-qwen';

export interface FabricNode {
  id: string;
  ollamaUrl: string;
  /** Base URL of the fake OpenAI server without `/v1`. */
  vllmUrl: string;
  capacity?: number;
  maxQueue?: number;
  queueTimeoutMs?: number;
  maxConcurrency?: number;
}

export interface FabricOptions {
  dataDir: string;
  nodes: FabricNode[];
  /** Node transport listen address; default 127.0.0.1:0. */
  transportListen?: string;
  registerTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  heartbeatTimeoutMs?: number;
  logLevel?: string;
}

/**
 * The `cluster:` section of an e2e edge: on, the NATS server at `natsUrl`, the fabric key file at `keyFile`, and a
 * short heartbeat and state TTL so that peers are seen (and lost) within seconds.
 */
export function clusterSection(natsUrl: string, keyFile: string): Record<string, unknown> {
  return {
    enabled: true,
    fabric_key_file: keyFile,
    nats: { servers: [natsUrl] },
    heartbeat_ms: 200,
    state_ttl_ms: 1500,
  };
}

export function ollamaProviderId(nodeId: string): string {
  return `${nodeId}-ollama`;
}

export function vllmProviderId(nodeId: string): string {
  return `${nodeId}-vllm`;
}

export function fabricConfig(options: FabricOptions): Record<string, unknown> {
  return {
    edge: {
      id: 'edge-e2e',
      listen: options.transportListen ?? '127.0.0.1:0',
      data_dir: options.dataDir,
      register_timeout_ms: options.registerTimeoutMs ?? 1000,
      heartbeat_interval_ms: options.heartbeatIntervalMs ?? 500,
      heartbeat_timeout_ms: options.heartbeatTimeoutMs ?? 3000,
    },
    logging: { level: options.logLevel ?? 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    bootstrap: { listen: '127.0.0.1:0' },
    openai: { enabled: true, listen: '127.0.0.1:0', timeout_sec: 60 },
    a2a: { enabled: false },
    models: [
      {
        id: MODEL_LLAMA,
        providers: Object.fromEntries(
          options.nodes.map((node) => [ollamaProviderId(node.id), OLLAMA_SERVED]),
        ),
      },
      {
        id: MODEL_QWEN,
        providers: Object.fromEntries(options.nodes.map((node) => [vllmProviderId(node.id), VLLM_SERVED])),
      },
    ],
    nodes: options.nodes.map((node) => ({
      id: node.id,
      alias: node.id,
      token: FABRIC_TOKEN,
      runtime: { max_concurrency: node.maxConcurrency ?? 64, health_probe_interval_ms: 0 },
      adapters: {
        instances: [
          {
            name: 'ollama',
            type: 'ollama',
            enabled: true,
            base_url: node.ollamaUrl,
            request_timeout_ms: 30_000,
          },
          {
            name: 'vllm',
            type: 'openai_compat',
            enabled: true,
            provider: 'vllm',
            base_url: `${node.vllmUrl}/v1`,
            headers: { Authorization: 'Bearer e2e-upstream-key' },
            request_timeout_ms: 30_000,
          },
        ],
      },
      providers: [
        {
          id: ollamaProviderId(node.id),
          type: 'ollama',
          category: 'local_inference',
          adapter: 'ollama',
          models: [OLLAMA_SERVED],
          capacity: node.capacity ?? 8,
          max_queue: node.maxQueue ?? 64,
          queue_timeout_ms: node.queueTimeoutMs ?? 20_000,
        },
        {
          id: vllmProviderId(node.id),
          type: 'vllm',
          category: 'api',
          adapter: 'vllm',
          models: [VLLM_SERVED],
          capacity: node.capacity ?? 8,
          max_queue: node.maxQueue ?? 64,
          queue_timeout_ms: node.queueTimeoutMs ?? 20_000,
        },
      ],
    })),
  };
}
