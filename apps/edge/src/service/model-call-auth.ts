// Who a model call runs as (issue 42). A request that arrived through an agent's model call (an in-memory
// connection the node link's relay made: http/model-call-socket.ts) authenticates with the secret its run was
// given (governance/run-secrets.ts), never with an API key; a request from the network never with a run secret
// (the surfaces ask this only for model-call sockets). Accepted when the secret is the one of the call's parent
// run (compared in constant time) and that run still executes on the node whose link carried the call; the
// request then runs as the parent's principal, as a child of the parent.
import type { ModelCallContext } from '../http/model-call-socket.js';
import type { Principal } from '../governance/principal.js';
import type { RunSecrets } from '../governance/run-secrets.js';
import type { EdgeService, ParentRef } from './types.js';

export type ModelCallAuthentication =
  | { kind: 'accepted'; principal: Principal | undefined; parent: ParentRef }
  /** No secret presented. */
  | { kind: 'missing' }
  /** Not this run's secret, or the run no longer executes on that node. */
  | { kind: 'invalid' };

export interface ModelCallAuthenticator {
  authenticate(call: ModelCallContext, secret: string | undefined): ModelCallAuthentication;
}

export function createModelCallAuthenticator(deps: {
  secrets: RunSecrets;
  service: Pick<EdgeService, 'resolveParent'>;
}): ModelCallAuthenticator {
  return {
    authenticate(call, secret) {
      if (secret === undefined || secret === '') return { kind: 'missing' };
      if (!deps.secrets.verify(call.parentRunId, secret)) return { kind: 'invalid' };
      const parent: ParentRef = { runId: call.parentRunId, nodeId: call.nodeId };
      const resolved = deps.service.resolveParent(parent);
      if (!resolved) return { kind: 'invalid' };
      return { kind: 'accepted', principal: resolved.principal, parent };
    },
  };
}

/** The secret of an `Authorization: Bearer <secret>` header; undefined when there is none. */
export function bearerSecret(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec((authorization ?? '').trim());
  return match?.[1];
}
