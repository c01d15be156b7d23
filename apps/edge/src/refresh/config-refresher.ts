// The live config-refresh coordinator. It holds the edge's current EdgeConfig — the single source of truth for
// every live-appliable value — and turns a candidate edge.yaml into a RefreshResult:
//
// 1. parse + validate the candidate (`@iop/config`), classify it against the current config (`classifyRefresh`);
// 2. `rejected` / `restart_required` / `dry-run`: nothing changes; the result reports every field with its path;
// 3. `apply` of a live-only change, all or nothing: first every affected connected node is sent its new payload
//    (the runtime's `applyNodeConfig`, node/node-config-push.ts) and the acknowledgements are collected with a
//    timeout. Only when all acknowledged is the edge switched, in one synchronous step: the provider pool's
//    `applyConfig` builds its whole table before the swap, `current` is replaced, and later registrations get the
//    new payloads — no dispatch ever sees half a config. In-flight runs keep their leases (counters are keyed by
//    provider id), so a capacity cut or a disabled provider only affects new dispatches and running work drains;
//    queued requests are re-evaluated by the pool against the new table at once;
// 4. a node that refused or did not answer, or a failure of the switch itself, makes the result `rejected`: the
//    nodes that applied are sent their previous payload again, the edge keeps its state, and the result says per
//    node what happened (`node_results`) plus one `invalid` report per cause. Any unexpected failure inside the
//    edge is a `rejected` result with a report too, never a thrown error.
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
import type { Clock } from '../clock.js';
import { silentLogger, type Logger } from '../logging.js';
import { payloadForNode } from '../node/mapper.js';
import type {
  NodeConfigApplyOptions,
  NodeConfigApplyOutcome,
  NodeRefreshResult,
} from '../node/node-config-push.js';
import type { PoolConfig } from '../pool/provider-pool.js';
import type { RefreshNodeOutcome, RefreshResult } from './refresh-result.js';
import { createSerialGate, type SerialGate } from './serial-gate.js';

/** Routing state swapped atomically on apply (the provider pool). */
export interface RoutingTarget {
  applyConfig(config: PoolConfig): void;
}

/**
 * Pushes the nodes' new payloads all or nothing and calls `options.commit` only when every node acknowledged
 * (EdgeRuntime.applyNodeConfig).
 */
export type NodeConfigApplier = (
  config: EdgeConfig,
  options: NodeConfigApplyOptions,
) => Promise<NodeConfigApplyOutcome>;

export interface ConfigRefresherOptions {
  /** The config the edge runs now. */
  config: EdgeConfig;
  /** The running config's file; its directory resolves a candidate's relative paths (else the candidate's). */
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
  /** Times a refresh's wait for a running one. */
  clock: Clock;
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
    clock: options.clock,
  });
  let current = options.config;
  let applied = 0;

  function parse(candidateYaml: string, sourcePath: string): ConfigLoadResult {
    // Relative paths (data_dir, artifact_dir, tls files) resolve against the running config's directory, as they
    // did when the edge loaded it, so a candidate staged elsewhere does not show path changes nobody made.
    const base = options.configPath || sourcePath;
    const baseDir = base && path.isAbsolute(base) ? path.dirname(base) : undefined;
    return parseConfigText(candidateYaml, sourcePath || 'refresh candidate', baseDir ? { baseDir } : {});
  }

  async function run(mode: string, candidateYaml: string, sourcePath: string): Promise<RefreshResult> {
    let result: RefreshResult | undefined;
    try {
      const candidate = parse(candidateYaml, sourcePath);
      const classification = classifyRefresh(current, candidate, mode);
      result = fromClassification(classification);
      if (classification.status === 'applied' && mode === 'apply' && candidate.ok) {
        await apply(candidate.config, result);
      }
    } catch (error) {
      // A bug or an unexpected failure inside the edge: still an answer the operator can read.
      logger.error({ error: describe(error) }, 'config refresh failed inside the edge');
      result = rejectedResult(result, mode, {
        path: '',
        change: 'modified',
        class: 'invalid',
        reason: `(edge): the edge failed while handling the refresh: ${describe(error)}; nothing was applied`,
      });
    }
    logOutcome(result);
    return result;
  }

  /** Prepare on the nodes, then switch the edge only if all acknowledged (see the module header). */
  async function apply(next: EdgeConfig, result: RefreshResult): Promise<void> {
    const previous = current;
    // One synchronous step: the pool table and `current` change together, nothing awaits in between.
    const commit = (): void => {
      options.routing?.applyConfig(next);
      current = next;
      applied += 1;
    };
    if (!options.applyNodeConfig) {
      commit();
      return;
    }
    const outcome = await options.applyNodeConfig(next, { timeoutMs: nodeTimeoutMs, commit });
    result.node_results = nodeOutcomes(outcome.results, affectedNodes(previous, next));
    if (outcome.status === 'applied') return;
    result.status = 'rejected';
    for (const node of result.node_results) {
      if (node.status === 'failed' || node.status === 'timeout') {
        result.reports.push({
          path: `nodes[${node.node_id}]`,
          change: 'modified',
          class: 'invalid',
          reason: `nodes[${node.node_id}]: the node did not apply its new payload (${node.status}: ${node.error}); nothing was applied`,
        });
      }
    }
    if (outcome.error) {
      result.reports.push({
        path: '',
        change: 'modified',
        class: 'invalid',
        reason: `(edge): ${outcome.error}; nothing was applied`,
      });
    }
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

/** A rejected result keeping what was classified (if anything) plus `report`. */
function rejectedResult(
  partial: RefreshResult | undefined,
  mode: string,
  report: RefreshResult['reports'][number],
): RefreshResult {
  return {
    status: 'rejected',
    mode: partial?.mode ?? mode,
    changed_nodes: partial?.changed_nodes ?? [],
    changed_providers: partial?.changed_providers ?? [],
    changed_models: partial?.changed_models ?? [],
    reports: [...(partial?.reports ?? []), report],
    node_results: partial?.node_results ?? [],
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
      case 'reverted':
      case 'revert_failed':
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
