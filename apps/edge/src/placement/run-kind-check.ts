// What a node can be sent: only the run kinds it announced at registration (older nodes: chat only), and none of
// the request fields it predates. Checked when the run is dispatched to its node, so the caller gets a clear error
// (upgrade iop-node) instead of an answer that silently ignored part of the request.
import { RunKind } from '@iop/wire';
import type { NodeLink } from '../node/node-link.js';
import { PlacementError } from './errors.js';
import type { RunSpec } from './run-types.js';

const RUN_KIND_NAMES: Partial<Record<RunKind, string>> = {
  [RunKind.RUN_KIND_COMPLETION]: 'text completion',
  [RunKind.RUN_KIND_EMBEDDING]: 'embedding',
};

/**
 * A node runs only the kinds it announced at registration (older nodes: chat only); anything else is refused
 * here, before it is sent, with a message that says what to do. A node that announces no kinds predates the
 * request fields of GenerationParams 10-13 and RunRequest.extra_body_json too: it would ignore them, so a run
 * carrying one is refused the same way rather than answered without it.
 */
export function requireRunKind(link: NodeLink, spec: RunSpec): void {
  const kind = spec.kind ?? RunKind.RUN_KIND_CHAT;
  const node = `node ${link.nodeId} (iop-node ${link.info.agentVersion || 'unknown version'})`;
  if (kind !== RunKind.RUN_KIND_CHAT && !link.info.runKinds.includes(kind)) {
    throw new PlacementError(
      'node_outdated',
      `${node} does not run ${RUN_KIND_NAMES[kind] ?? `kind ${kind}`} requests: upgrade iop-node on it`,
    );
  }
  if (link.info.runKinds.length > 0) return;
  const field = newerField(spec);
  if (field) {
    throw new PlacementError(
      'node_outdated',
      `${node} predates '${field}' and would ignore it: upgrade iop-node on it, or leave the field out`,
    );
  }
}

/** The first request field only nodes that announce run kinds apply, if the run carries one. */
function newerField(spec: RunSpec): string | undefined {
  const params = spec.params;
  if (params?.seed !== undefined) return 'seed';
  if (params?.presencePenalty !== undefined) return 'presence_penalty';
  if (params?.frequencyPenalty !== undefined) return 'frequency_penalty';
  if (params?.responseFormatJson) return 'response_format';
  if (spec.extraBodyJson) return 'forwarded fields';
  if (spec.messages.some((message) => message.imageUrls.length > 0)) return 'image_url (remote image URLs)';
  return undefined;
}
