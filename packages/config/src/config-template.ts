// The edge.yaml written by `iop-edge config init`: a minimal, valid, commented starting point for a fresh edge
// host. Nodes are not listed: `iop-edge node register` issues their tokens into the node store, and provider
// pools are added by hand later (see configs/edge.yaml for a full example).
import { ConfigError } from './errors.js';
import { DEFAULTS } from './limits.js';
import type { ConfigTemplateOptions } from './types.js';
import { isListenAddress } from './listen-address.js';
import { isHttpUrl } from './validate-structure.js';

export function renderConfigTemplate(options: ConfigTemplateOptions): string {
  if (!isHttpUrl(options.publicUrl)) {
    throw new ConfigError(
      'invalid_argument',
      `public URL must be an http:// or https:// URL: ${options.publicUrl}`,
    );
  }
  const listen = options.listen ?? DEFAULTS.edge_listen;
  if (!isListenAddress(listen))
    throw new ConfigError('invalid_argument', `listen must be host:port: ${listen}`);
  const edgeId = options.edgeId ?? DEFAULTS.edge_id;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(edgeId)) {
    throw new ConfigError('invalid_argument', `edge id must be an identifier: ${edgeId}`);
  }
  const dataDir = options.dataDir ?? DEFAULTS.data_dir;
  if (dataDir.trim() === '') throw new ConfigError('invalid_argument', 'data dir must not be empty');
  const q = (value: string): string => JSON.stringify(value);
  const adminToken = options.adminToken ?? '';
  if (/[\s"\\]/.test(adminToken)) {
    throw new ConfigError(
      'invalid_argument',
      'the admin token must not contain spaces, quotes or backslashes',
    );
  }
  const adminSection = adminToken
    ? `# Operator admin API (config refresh, node commands). Every call needs admin_token, on loopback too; the
# CLI commands (nodes list, usage, config refresh, node adopt) read it from this file. Keep the file private.
refresh: { enabled: true, listen: ${q(DEFAULTS.refresh_listen)}, admin_token: ${q(adminToken)} }`
    : `# Operator admin API (config refresh, node commands). Without admin_token it answers anyone on this host
# (loopback only, with a warning at every start): set one.
refresh: { enabled: true, listen: ${q(DEFAULTS.refresh_listen)}, admin_token: "" }`;
  const tls = options.tls
    ? `tls: { enabled: true, cert_file: ${q(options.tls.certFile)}, key_file: ${q(options.tls.keyFile)} }   # nodes pin this key's fingerprint`
    : 'tls: { enabled: false, cert_file: "", key_file: "" }   # plaintext: tokens and runs cross the network in clear';
  return `# IOP edge configuration, written by \`iop-edge config init\`.
# Check it with \`iop-edge config check\`; the full key reference is
# agent-contract/inner/edge-config-runtime-refresh.md. Relative paths resolve against this file's directory.

edge:
  id: ${q(edgeId)}
  listen: ${q(listen)}            # node transport (TCP)
  data_dir: ${q(dataDir)}              # node store and run history
  ${tls}

logging: { level: "info", format: "json" }

metrics: { enabled: false, listen: ${q(DEFAULTS.metrics_listen)} }

${adminSection}

# Ops dashboard in a browser (same rule as the admin API: loopback only unless refresh.admin_token is set; the
# dashboard's login asks for that token).
ui: { enabled: false, listen: ${q(DEFAULTS.ui_listen)} }

# Every HTTP listener answers only requests whose Host (and a browser's Origin) is one of its own addresses or
# public URLs (421/403 otherwise: no DNS rebinding). Add the names a reverse proxy or DNS entry puts in front.
http: { allowed_hosts: [] }

bootstrap:
  listen: ${q(DEFAULTS.bootstrap_listen)}
  public_url: ${q(options.publicUrl)}   # the URL nodes download their bootstrap from
  artifact_dir: ${q(DEFAULTS.artifact_dir)}

console: { node: "", adapter: "cli", target: "", session_id: "default" }

openai:
  enabled: false
  listen: ${q(DEFAULTS.openai_listen)}
  api_keys: []        # API keys (OpenAI and A2A); empty = no authentication. Add one with limits:
                      #   iop-edge keys create team-a --models m1 --rpm 60 --budget 1000000/month
  model_routes: []

a2a:
  enabled: false
  listen: ${q(DEFAULTS.a2a_listen)}
  path: "/a2a"
  bearer_token: ""

# Provider-pool model catalog: models[].providers maps provider ids to served model names.
models: []

# Nodes registered with \`iop-edge node register <id>\` authenticate from the node store; list a node here to
# give it adapters and providers, e.g.:
#   - id: "node-01"
#     runtime: { max_concurrency: 4 }
#     adapters:
#       ollama: { enabled: true, base_url: "http://127.0.0.1:11434" }
#     providers:
#       - { id: "ollama-local", type: "ollama", category: "local_inference", adapter: "ollama", models: ["llama3.2"] }
nodes: []
`;
}
