// Which runs get a model endpoint (issue 42): a run of a CLI profile whose `fabric_model` is set carries
// RunRequest.model_access — the models[] id its agent calls and a secret made for this run alone (run-secrets.ts).
// The table is read from the startup config: `fabric_model` is an execution field of the adapter instance, so a
// change takes a restart (packages/config classify-refresh).
import { resolveAdapterReference, type NodeConfig } from '@iop/config';
import type { ModelAccess } from '@iop/wire';
import type { RunSecrets } from '../governance/run-secrets.js';

/** The run a RunRequest is being built for: where it executes. */
export interface AccessTarget {
  runId: string;
  nodeId: string;
  /** The adapter instance (or, for an explicit route, the reference the route names). */
  adapter: string;
  target: string;
}

/** The model access of a run about to be dispatched; undefined = none (not a `fabric_model` profile). */
export type ModelAccessGrant = (run: AccessTarget) => ModelAccess | undefined;

export function createModelAccessGrant(nodes: readonly NodeConfig[], secrets: RunSecrets): ModelAccessGrant {
  const byNode = new Map(nodes.map((node) => [node.id, node]));
  return (run) => {
    const node = byNode.get(run.nodeId);
    if (!node) return undefined;
    const resolution = resolveAdapterReference(node.adapters.instances, run.adapter);
    if (!resolution.ok || resolution.instance.type !== 'cli') return undefined;
    const model = resolution.instance.profiles[run.target]?.fabric_model ?? '';
    if (model === '') return undefined;
    return { apiKey: secrets.issue(run.runId), model };
  };
}
