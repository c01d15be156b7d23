// "No open door": a surface that lets callers run work (OpenAI API, A2A) must not listen beyond loopback without
// authentication, and the admin API's bearer token must not cross the network in clear. These are errors in
// `config check` and at `serve` unless the operator opts out per surface with `allow_unauthenticated: true`;
// the opt-out and a plaintext node link are warnings (securityWarnings) printed at every start.
import type { PendingIssue } from './config-path.js';
import { isLoopbackHost, isLoopbackListen } from './listen-address.js';
import type { EdgeConfig } from './types.js';

export function checkExposure(config: EdgeConfig, issues: PendingIssue[]): void {
  const { openai, a2a, refresh, edge } = config;
  if (config.cluster.enabled && !config.cluster.nats.allow_plaintext) {
    for (const index of plaintextNatsServers(config)) {
      issues.push({
        segments: ['cluster', 'nats', 'servers', index],
        code: 'insecure',
        message:
          `${config.cluster.nats.servers[index] ?? ''} is beyond this host but cluster.nats.tls is off: who can ` +
          'see the network sees which edges and nodes there are and when runs go. Enable cluster.nats.tls, use a ' +
          'loopback server, or set cluster.nats.allow_plaintext: true',
      });
    }
  }
  if (
    openai.enabled &&
    !isLoopbackListen(openai.listen) &&
    openai.api_keys.length === 0 &&
    !openai.allow_unauthenticated
  ) {
    issues.push({
      segments: ['openai', 'listen'],
      code: 'unauthenticated',
      message:
        `${openai.listen} is reachable beyond this host but openai.api_keys is empty: anyone who can reach it ` +
        'could run work on your nodes. Add api_keys, listen on 127.0.0.1, or set openai.allow_unauthenticated: true',
    });
  }
  // A2A accepts openai.api_keys as well as its bearer-token shortcut: either one closes the door.
  const a2aOpen = a2a.bearer_token === '' && openai.api_keys.length === 0;
  if (a2a.enabled && !isLoopbackListen(a2a.listen) && a2aOpen && !a2a.allow_unauthenticated) {
    issues.push({
      segments: ['a2a', 'listen'],
      code: 'unauthenticated',
      message:
        `${a2a.listen} is reachable beyond this host but a2a.bearer_token is empty: anyone who can reach it ` +
        'could run work on your nodes. Set bearer_token, listen on 127.0.0.1, or set a2a.allow_unauthenticated: true',
    });
  }
  if (
    // The admin API listens whenever refresh.listen is set (refresh.enabled gates only RefreshConfig).
    refresh.listen !== '' &&
    !isLoopbackListen(refresh.listen) &&
    (refresh.admin_token !== '' || refresh.admin_keys.length > 0) &&
    !edge.tls.enabled
  ) {
    issues.push({
      segments: ['refresh', 'listen'],
      code: 'insecure',
      message:
        `the admin API on ${refresh.listen} would receive refresh.admin_token or admin_keys in clear: enable edge.tls ` +
        '(the admin API then uses the edge certificate) or listen on 127.0.0.1',
    });
  }
  const { ui } = config;
  if (ui.enabled && !isLoopbackListen(ui.listen)) {
    if (refresh.admin_token === '') {
      issues.push({
        segments: ['ui', 'listen'],
        code: 'unauthenticated',
        message:
          `the dashboard on ${ui.listen} is reachable beyond this host but refresh.admin_token is empty: anyone ` +
          'who can reach it could change the config and run work. Set refresh.admin_token or listen on 127.0.0.1',
      });
    } else if (!edge.tls.enabled) {
      issues.push({
        segments: ['ui', 'listen'],
        code: 'insecure',
        message:
          `the dashboard on ${ui.listen} would receive refresh.admin_token in clear: enable edge.tls ` +
          '(the dashboard then serves HTTPS with the edge certificate) or listen on 127.0.0.1',
      });
    }
  }
}

/** Indexes of cluster.nats.servers beyond loopback reached without TLS (tls.enabled off, not tls:// or wss://). */
export function plaintextNatsServers(config: EdgeConfig): number[] {
  const { nats } = config.cluster;
  if (nats.tls.enabled) return [];
  const plaintext: number[] = [];
  for (const [index, server] of nats.servers.entries()) {
    let url: URL;
    try {
      url = new URL(server.includes('://') ? server : `nats://${server}`);
    } catch {
      plaintext.push(index);
      continue;
    }
    if (url.protocol === 'tls:' || url.protocol === 'wss:') continue;
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (!isLoopbackHost(host)) plaintext.push(index);
  }
  return plaintext;
}

/** Things that are allowed but unsafe, one line each, for `serve`, `config check` and `node register`. */
export function securityWarnings(config: EdgeConfig): string[] {
  const warnings: string[] = [];
  if (config.cluster.enabled && config.cluster.nats.allow_plaintext) {
    const servers = plaintextNatsServers(config).map((index) => config.cluster.nats.servers[index]);
    if (servers.length > 0) {
      warnings.push(
        `cluster.nats.allow_plaintext: NATS ${servers.join(', ')} is reached without TLS; the fabric key still ` +
          'seals every message, but subjects, sizes and timing cross the network in clear',
      );
    }
  }
  if (!config.edge.tls.enabled) {
    warnings.push(
      'edge.tls is off: the node link is NOT encrypted and nodes cannot authenticate the edge; node tokens and ' +
        "runs cross the network in clear (run 'iop-edge config init' for a key and certificate, or set edge.tls)",
    );
  }
  const { openai, a2a, refresh, ui } = config;
  if (refresh.listen !== '' && refresh.admin_token === '' && refresh.admin_keys.length === 0) {
    warnings.push(
      `refresh.admin_token is empty: the admin API on ${refresh.listen}${ui.enabled ? ` and the dashboard on ${ui.listen}` : ''} ` +
        'answer any local account (reconfigure the fleet, run prompts on every node); set refresh.admin_token ' +
        "(e.g. the one 'iop-edge config init' generates) and keep edge.yaml private",
    );
  }
  if (
    openai.enabled &&
    openai.allow_unauthenticated &&
    openai.api_keys.length === 0 &&
    !isLoopbackListen(openai.listen)
  ) {
    warnings.push(
      `openai.allow_unauthenticated: the OpenAI API on ${openai.listen} accepts anyone who can reach it`,
    );
  }
  if (
    a2a.enabled &&
    a2a.allow_unauthenticated &&
    a2a.bearer_token === '' &&
    openai.api_keys.length === 0 &&
    !isLoopbackListen(a2a.listen)
  ) {
    warnings.push(`a2a.allow_unauthenticated: the A2A API on ${a2a.listen} accepts anyone who can reach it`);
  }
  return warnings;
}
