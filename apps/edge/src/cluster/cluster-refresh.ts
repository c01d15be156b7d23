// `config refresh` in cluster mode: a refresh asked of one edge applies to every live edge, all or nothing.
//
//   1. dry-run on this edge and on every other live edge (request `iop.refresh.<edge>`, sealed with the fabric
//      key: only an edge of the fabric can ask, and nobody else reads the YAML). Only the fabric-wide part of the
//      candidate is sent: the per-edge settings (PER_EDGE_PATHS: identity, data dir, listeners, TLS files, public
//      URLs, the cluster section) are cut out, and each receiver puts its own back before it classifies the
//      result against its own running config. So edges that listen on different addresses take one refresh;
//   2. mode dry-run: the merged result; mode apply: nothing is applied unless every edge would apply;
//   3. apply here, then on the others; when one refuses, every edge that applied goes back to the text it ran
//      before (its own previous edge.yaml text), and the result is `rejected` naming the edge.
//
// The merged result is this edge's, with one report per other edge (`cluster.edges.<id>`), their node results,
// and the worst status. Edges whose published config revision differs from this one are reported too.
import type { FabricBus } from './fabric-bus.js';
import { parseDocument } from 'yaml';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { ConfigRefresher } from '../refresh/config-refresher.js';
import type { RefreshResult } from '../refresh/refresh-result.js';

export interface ClusterRefreshDeps {
  edgeId: string;
  nc: FabricBus;
  /** Live remote edges with the config revision each published. */
  liveEdges(): { edgeId: string; configRevision: string }[];
  /** This edge's config revision now. */
  revision(): string;
  local: ConfigRefresher;
  /** The edge.yaml text this edge started from ('' when it did not start from a file). */
  initialYaml: string;
  logger: Logger;
  /** Stamps refresh ids. */
  clock: Clock;
  /** How long another edge may take to answer one step (default 30 s). */
  timeoutMs?: number;
}

type RefreshOp =
  | { op: 'refresh'; id: string; mode: string; yaml: string }
  | { op: 'rollback'; id: string }
  | { op: 'commit'; id: string };

type RefreshReply = { ok: true; result: RefreshResult } | { ok: false; error: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Applied-but-uncommitted refreshes kept for a rollback. */
const MAX_PENDING = 16;

const STATUS_RANK: Record<RefreshResult['status'], number> = { applied: 0, restart_required: 1, rejected: 2 };

/**
 * The settings each edge keeps from its own file: never sent to another edge, never taken from one. A refresh
 * that changes one of them on the edge it was asked of applies there only.
 */
export const PER_EDGE_PATHS: readonly (readonly string[])[] = [
  ['edge', 'id'],
  ['edge', 'data_dir'],
  ['edge', 'listen'],
  ['edge', 'tls'],
  ['metrics', 'listen'],
  ['refresh', 'listen'],
  ['bootstrap', 'listen'],
  ['bootstrap', 'public_url'],
  ['bootstrap', 'artifact_dir'],
  ['openai', 'listen'],
  ['a2a', 'listen'],
  ['a2a', 'public_url'],
  ['ui', 'listen'],
  ['cluster'],
];

/** The fabric-wide part of an edge.yaml text: every PER_EDGE_PATHS entry removed ('' when it does not parse). */
export function fabricPart(yaml: string): string {
  const document = parseDocument(yaml);
  if (document.errors.length > 0) return '';
  for (const key of PER_EDGE_PATHS) removeIn(document, key);
  return document.toString({ lineWidth: 0 });
}

/** The fabric-wide part another edge sent, with this edge's own PER_EDGE_PATHS (from `own`) put back. */
export function withOwnPart(fabric: string, own: string): string {
  const document = parseDocument(fabric);
  const ownDocument = parseDocument(own);
  if (document.errors.length > 0 || ownDocument.errors.length > 0) return fabric;
  for (const key of PER_EDGE_PATHS) {
    const value: unknown = ownDocument.hasIn(key) ? ownDocument.getIn(key, true) : undefined;
    removeIn(document, key);
    if (value === undefined) continue;
    try {
      document.setIn(key, value);
    } catch {
      // The sender's section is not a map (e.g. `metrics: null`): this edge's own section replaces it.
      document.setIn([key[0]], ownDocument.getIn([key[0]], true));
    }
  }
  return document.toString({ lineWidth: 0 });
}

/** Deletes the path when it is there (a missing or scalar parent has nothing to delete). */
function removeIn(document: ReturnType<typeof parseDocument>, key: readonly string[]): void {
  if (document.hasIn(key)) document.deleteIn(key);
}

function isRefreshMode(mode: unknown): mode is 'dry-run' | 'apply' {
  return mode === 'dry-run' || mode === 'apply';
}

export interface ClusterRefresher {
  readonly refresher: ConfigRefresher;
  close(): void;
}

export function createClusterRefresher(deps: ClusterRefreshDeps): ClusterRefresher {
  const { nc, local, logger } = deps;
  const timeoutMs = deps.timeoutMs ?? 30_000;
  /** The text this edge runs now (its own edge section). */
  let ownYaml = deps.initialYaml;
  const pending = new Map<string, string>();
  let seq = 0;

  /** Refreshes this edge; `fromPeer`: the candidate came from another edge (keep this edge's own keys). */
  async function applyHere(
    id: string,
    mode: string,
    yaml: string,
    fromPeer: boolean,
    sourcePath = '',
  ): Promise<RefreshResult> {
    const candidate = fromPeer ? withOwnPart(yaml, ownYaml) : yaml;
    const result = await local.refresh(mode, candidate, sourcePath);
    if (mode === 'apply' && result.status === 'applied') {
      pending.set(id, ownYaml);
      while (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value as string);
      ownYaml = candidate;
    }
    return result;
  }

  async function rollbackHere(id: string): Promise<RefreshResult | undefined> {
    const previous = pending.get(id);
    pending.delete(id);
    if (previous === undefined || previous === '') return undefined;
    const result = await local.refresh('apply', previous, '');
    if (result.status === 'applied') ownYaml = previous;
    return result;
  }

  const subscription = nc.subscribe(`iop.refresh.${deps.edgeId}`, {
    bound: true,
    callback: (error, msg) => {
      if (error) return;
      const here: PeerSide = {
        applyHere,
        rollbackHere,
        forget: (id) => pending.delete(id),
        hasOwnConfig: () => ownYaml !== '',
      };
      void answerPeer(msg.data, here).then((reply) => msg.respond(encoder.encode(JSON.stringify(reply))));
    },
  });

  /** A commit to an edge; one that left the membership view meanwhile drops its candidate on its own. */
  function publishTo(edgeId: string, data: Uint8Array): void {
    try {
      nc.publish(`iop.refresh.${edgeId}`, data, { to: edgeId });
    } catch (error) {
      deps.logger.warn(
        { edgeId, error: error instanceof Error ? error.message : String(error) },
        'cluster: refresh commit not sent',
      );
    }
  }

  async function ask(edgeId: string, op: RefreshOp): Promise<RefreshReply> {
    try {
      const response = await nc.request(`iop.refresh.${edgeId}`, encoder.encode(JSON.stringify(op)), {
        timeout: timeoutMs,
        to: edgeId,
      });
      return JSON.parse(decoder.decode(response.data)) as RefreshReply;
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
  }

  async function refresh(mode: string, yaml: string, sourcePath: string): Promise<RefreshResult> {
    const edges = deps.liveEdges();
    const id = `${deps.edgeId}-${deps.clock.now().toString(36)}-${++seq}`;
    if ((mode !== 'dry-run' && mode !== 'apply') || edges.length === 0) {
      const result = await applyHere(id, mode, yaml, false, sourcePath);
      pending.delete(id);
      return result;
    }
    const dryHere = await applyHere(id, 'dry-run', yaml, false, sourcePath);
    // What the others get: the candidate without this edge's own settings (they keep theirs).
    const fabric = fabricPart(yaml);
    const dryOthers = await Promise.all(
      edges.map(async (edge) => ({
        edgeId: edge.edgeId,
        reply: await ask(edge.edgeId, { op: 'refresh', id, mode: 'dry-run', yaml: fabric }),
      })),
    );
    const dry = merge(dryHere, dryOthers);
    revisionReports(dry, edges, deps.revision());
    if (mode === 'dry-run' || dry.status !== 'applied') return { ...dry, mode };

    const here = await applyHere(id, 'apply', yaml, false, sourcePath);
    if (here.status !== 'applied')
      return merge(
        here,
        dryOthers.map(({ edgeId }) => skipped(edgeId)),
      );
    const applied: { edgeId: string; reply: RefreshReply }[] = [];
    for (const edge of edges) {
      applied.push({
        edgeId: edge.edgeId,
        reply: await ask(edge.edgeId, { op: 'refresh', id, mode, yaml: fabric }),
      });
    }
    const failed = applied.filter(({ reply }) => !reply.ok || reply.result.status !== 'applied');
    if (failed.length === 0) {
      pending.delete(id);
      for (const edge of edges) publishTo(edge.edgeId, encodeOp({ op: 'commit', id }));
      return merge(here, applied);
    }
    // All or nothing: every edge that applied goes back to what it ran before.
    logger.warn(
      { edges: failed.map(({ edgeId }) => edgeId) },
      'cluster refresh: an edge refused; rolling back',
    );
    const back = await rollbackHere(id);
    for (const { edgeId, reply } of applied) {
      if (reply.ok && reply.result.status === 'applied') await ask(edgeId, { op: 'rollback', id });
    }
    const result = merge(here, applied, 'rejected');
    result.reports.push({
      path: 'cluster',
      change: 'modified',
      class: 'invalid',
      reason: `cluster: ${failed.map(({ edgeId }) => edgeId).join(', ')} did not apply; every edge went back to its previous config${back && back.status !== 'applied' ? ' (this edge could not)' : ''}`,
    });
    return result;
  }

  return {
    refresher: {
      current: () => local.current(),
      refresh,
      get applied() {
        return local.applied;
      },
      close: () => local.close(),
    },
    close() {
      subscription.unsubscribe();
    },
  };
}

/** What answering another edge's refresh needs of this one. */
interface PeerSide {
  applyHere(id: string, mode: string, yaml: string, fromPeer: boolean): Promise<RefreshResult>;
  rollbackHere(id: string): Promise<RefreshResult | undefined>;
  /** Drops the candidate kept for a rollback (the refresh was committed). */
  forget(id: string): void;
  hasOwnConfig(): boolean;
}

/** Answers an `iop.refresh.<this edge>` message: a refresh (dry run or apply), a rollback or a commit. */
async function answerPeer(data: Uint8Array, here: PeerSide): Promise<RefreshReply> {
  try {
    const op = JSON.parse(decoder.decode(data)) as RefreshOp;
    if (op.op === 'refresh') {
      // Another edge asks only for a dry run or an apply (never a mode this edge would not take itself).
      if (!isRefreshMode(op.mode) || typeof op.yaml !== 'string') throw new Error('malformed refresh');
      if (!here.hasOwnConfig()) throw new Error('this edge has no config file to keep its own settings from');
      return { ok: true, result: await here.applyHere(op.id, op.mode, op.yaml, true) };
    }
    if (op.op === 'rollback') {
      const result = await here.rollbackHere(op.id);
      return result ? { ok: true, result } : { ok: false, error: 'nothing to roll back' };
    }
    here.forget(op.id);
    return { ok: false, error: 'committed' };
  } catch (caught) {
    return { ok: false, error: caught instanceof Error ? caught.message : String(caught) };
  }
}

/** This edge's result with the other edges' answers: the worst status wins, one report per edge. */
function merge(
  here: RefreshResult,
  others: { edgeId: string; reply: RefreshReply }[],
  extraStatus?: RefreshResult['status'],
): RefreshResult {
  const merged: RefreshResult = {
    ...here,
    reports: [...here.reports],
    node_results: [...here.node_results],
  };
  for (const { edgeId, reply } of others) {
    const path = `cluster.edges.${edgeId}`;
    if (!reply.ok) {
      merged.status = 'rejected';
      merged.reports.push({
        path,
        change: 'modified',
        class: 'invalid',
        reason: `${path}: edge ${edgeId} did not answer (${reply.error}); nothing was applied there`,
      });
      continue;
    }
    const { result } = reply;
    if (STATUS_RANK[result.status] > STATUS_RANK[merged.status]) merged.status = result.status;
    merged.node_results.push(...result.node_results);
    const first = result.reports.find((report) => report.class !== 'live')?.reason;
    merged.reports.push({
      path,
      change: 'modified',
      class:
        result.status === 'applied' ? 'live' : result.status === 'restart_required' ? 'restart' : 'invalid',
      reason: `${path}: edge ${edgeId} ${result.mode === 'apply' ? '' : 'would be '}${result.status}${first ? ` (${first})` : ''}`,
    });
  }
  if (extraStatus && STATUS_RANK[extraStatus] > STATUS_RANK[merged.status]) merged.status = extraStatus;
  return merged;
}

/** A report per live edge that runs another config revision than this one (`ours`). */
function revisionReports(
  result: RefreshResult,
  edges: { edgeId: string; configRevision: string }[],
  ours: string,
): void {
  for (const edge of edges) {
    if (edge.configRevision === ours) continue;
    result.reports.push({
      path: `cluster.edges.${edge.edgeId}`,
      change: 'modified',
      class: 'live',
      reason: `cluster.edges.${edge.edgeId}: runs config revision ${edge.configRevision}, this edge ${ours}`,
    });
  }
}

function encodeOp(op: RefreshOp): Uint8Array {
  return encoder.encode(JSON.stringify(op));
}

function skipped(edgeId: string): { edgeId: string; reply: RefreshReply } {
  return { edgeId, reply: { ok: false, error: 'not asked: this edge did not apply' } };
}
