// The live config-refresh coordinator. It holds the edge's current EdgeConfig — the single source of truth for
// every live-appliable value — and turns a candidate edge.yaml into a RefreshResult:
//
// 1. parse + validate the candidate (`@iop/config`), classify it against the current config (`classifyRefresh`);
// 2. `rejected` / `restart_required` / `dry-run`: nothing changes; the result reports every field with its path;
// 3. `apply` of a live-only change: the routing state is swapped in one synchronous step (the provider pool's
//    `applyConfig` builds its whole table before the swap, then `current` is replaced), so no dispatch ever sees
//    half a config: models, provider capacity / priority / queue policy / enabled and the generation policy
//    (read from the pool's models[] entries) change together. In-flight runs keep their leases (counters are
//    keyed by provider id), so a capacity cut or a disabled provider only affects new dispatches and running work
//    drains; queued requests are re-evaluated by the pool against the new table at once;
// 4. then every affected node gets a NodeConfigRefreshRequest with its new payload (via the runtime's
//    `applyNodeConfig`, which also makes later registrations get the new payload) and the acknowledgements are
//    collected with a timeout into `node_results`.
//
// Refreshes are serialized through a gate: a refresh that arrives while another runs waits up to `waitMs`, then
// fails with RefreshError `refresh_busy`. The candidate text is never logged (it holds tokens and keys).
import path from 'node:path';
import {
  classifyRefresh,
  parseConfigText,
  REFRESH_MODES,
  type ConfigLoadResult,
  type EdgeConfig,
  type RefreshClassification,
} from '@iop/config';
import { silentLogger, type Logger } from '../logging.js';
import { payloadForNode } from '../node/mapper.js';
import type { NodeRefreshResult } from '../node/node-config-push.js';
import type { PoolConfig } from '../pool/provider-pool.js';
import type { RefreshNodeOutcome, RefreshResult } from './refresh-result.js';
import { createSerialGate, type SerialGate } from './serial-gate.js';

/** Routing state swapped atomically on apply (the provider pool). */
export interface RoutingTarget {
  applyConfig(config: PoolConfig): void;
}

/** Pushes the nodes' new payloads and collects their acknowledgements (EdgeRuntime.applyNodeConfig). */
export type NodeConfigApplier = (
  config: EdgeConfig,
  options: { timeoutMs?: number },
) => Promise<NodeRefreshResult[]>;

export interface ConfigRefresherOptions {
  /** The config the edge runs now. */
  config: EdgeConfig;
  /** The running config's file; its directory resolves relative paths of a candidate sent without a path. */
  configPath?: string;
  /** Swapped on apply; none = the edge has no pool (nothing routes through models[]). */
  routing?: RoutingTarget;
  /** Pushes node payloads on apply; none = no node links (node_results lists nothing). */
  applyNodeConfig?: NodeConfigApplier;
  logger?: Logger;
  /** How long a refresh waits for a running one before failing with `refresh_busy`. Default 15 s. */
  waitMs?: number;
  /** How long each node has to acknowledge its new payload. Default 10 s. */
  nodeTimeoutMs?: number;
}

export interface ConfigRefresher {
  /** The config currently in force (replaced as a whole by an applied refresh). */
  current(): EdgeConfig;
  /** Classifies (and in mode `apply`, applies) a candidate edge.yaml text. */
  refresh(mode: string, candidateYaml: string, sourcePath: string): Promise<RefreshResult>;
  /** Number of applied refreshes so far. */
  readonly applied: number;
  /** Refuses new refreshes and rejects waiting ones; a running refresh completes. */
  close(): void;
}

export const DEFAULT_REFRESH_WAIT_MS = 15_000;
export const DEFAULT_NODE_ACK_TIMEOUT_MS = 10_000;

export function createConfigRefresher(options: ConfigRefresherOptions): ConfigRefresher {
  const logger = options.logger ?? silentLogger;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? DEFAULT_NODE_ACK_TIMEOUT_MS;
  const gate: SerialGate = createSerialGate({
    waitMs: options.waitMs ?? DEFAULT_REFRESH_WAIT_MS,
    label: 'config refresh',
  });
  let current = options.config;
  let applied = 0;

  function parse(candidateYaml: string, sourcePath: string): ConfigLoadResult {
    const base = sourcePath || options.configPath;
    const baseDir = base && path.isAbsolute(base) ? path.dirname(base) : undefined;
    return parseConfigText(candidateYaml, sourcePath || 'refresh candidate', baseDir ? { baseDir } : {});
  }

  async function run(mode: string, candidateYaml: string, sourcePath: string): Promise<RefreshResult> {
    const candidate = parse(candidateYaml, sourcePath);
    const classification = classifyRefresh(current, candidate, mode);
    const result = fromClassification(classification);
    if (classification.status !== 'applied' || mode !== 'apply' || !candidate.ok) {
      logOutcome(result);
      return result;
    }
    const previous = current;
    const next = candidate.config;
    // One synchronous step: the pool table and `current` change together, before anything awaits.
    options.routing?.applyConfig(next);
    current = next;
    applied += 1;
    if (options.applyNodeConfig) {
      const pushed = await options.applyNodeConfig(next, { timeoutMs: nodeTimeoutMs });
      result.node_results = nodeOutcomes(pushed, affectedNodes(previous, next));
    }
    logOutcome(result);
    return result;
  }

  function logOutcome(result: RefreshResult): void {
    logger.info(
      {
        mode: result.mode,
        status: result.status,
        changed_nodes: result.changed_nodes,
        changed_providers: result.changed_providers,
        changed_models: result.changed_models,
        reports: result.reports.length,
        node_results: result.node_results.map((node) => `${node.node_id}:${node.status}`),
      },
      'config refresh',
    );
  }

  return {
    current: () => current,
    refresh(mode, candidateYaml, sourcePath) {
      // A bad mode never waits behind a running refresh: it is rejected whatever the candidate says.
      if (!(REFRESH_MODES as readonly string[]).includes(mode)) {
        return Promise.resolve(
          fromClassification(classifyRefresh(current, parse(candidateYaml, sourcePath), mode)),
        );
      }
      return gate.run(() => run(mode, candidateYaml, sourcePath));
    },
    get applied() {
      return applied;
    },
    close() {
      gate.close();
    },
  };
}

function fromClassification(classification: RefreshClassification): RefreshResult {
  return {
    status: classification.status,
    mode: classification.mode,
    changed_nodes: [...classification.changed_nodes],
    changed_providers: [...classification.changed_providers],
    changed_models: [...classification.changed_models],
    reports: classification.reports.map((report) => ({ ...report })),
    node_results: [],
  };
}

/** Nodes whose payload (what the node itself runs) differs between the two configs. */
function affectedNodes(previous: EdgeConfig, next: EdgeConfig): Set<string> {
  const ids = new Set([...previous.nodes, ...next.nodes].map((node) => node.id));
  const affected = new Set<string>();
  for (const id of ids) {
    if (payloadForNode(previous.nodes, id).revision !== payloadForNode(next.nodes, id).revision) {
      affected.add(id);
    }
  }
  return affected;
}

/**
 * The push results an operator needs: every node that was sent a payload (an affected node, or a connected one
 * still running an older payload) and every affected node that is not connected. Unaffected nodes are left out.
 */
function nodeOutcomes(pushed: readonly NodeRefreshResult[], affected: Set<string>): RefreshNodeOutcome[] {
  const outcomes: RefreshNodeOutcome[] = [];
  for (const result of pushed) {
    switch (result.status) {
      case 'unchanged':
        break;
      case 'not_connected':
        if (affected.has(result.node_id)) {
          outcomes.push({ node_id: result.node_id, status: 'not_connected', error: result.error });
        }
        break;
      case 'applied':
      case 'failed':
      case 'timeout':
        outcomes.push({ node_id: result.node_id, status: result.status, error: result.error });
        break;
      default: {
        const unknown: never = result.status;
        throw new Error(`unknown node refresh status ${String(unknown)}`);
      }
    }
  }
  return outcomes.sort((left, right) => left.node_id.localeCompare(right.node_id));
}
