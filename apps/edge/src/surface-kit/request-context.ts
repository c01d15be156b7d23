// One request as a surface's handlers see it (the raw request and response, when it arrived, who is asking),
// and the one authentication of a caller the API surfaces share (OpenAI, Anthropic, A2A): an agent's model call
// by its run's secret (service/model-call-auth.ts), anyone else by an API key. Each surface words its own 401;
// the Host/Origin verdict is decided before any surface sees a request (http/host-guard.ts, on the listener).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal, PrincipalResolver } from '../governance/principal.js';
import type { ParentRef } from '../service/types.js';
import { bearerSecret, type ModelCallAuthenticator } from '../service/model-call-auth.js';
import { modelCallOf } from '../http/model-call-socket.js';

export interface RequestContext {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** performance.now() when the request arrived. */
  readonly arrivedAt: number;
  /** The request's principal once authenticated; undefined = anonymous (no key configured). */
  principal?: Principal | undefined;
  /** Set for an agent's model call: the run it is a child of. */
  parent?: ParentRef | undefined;
}

/** Why a caller was refused: no credentials or wrong ones, for an API key or for a model call's run secret. */
export interface CallerRefusal {
  reason: 'missing' | 'invalid';
  /** The request came over an agent's model-call connection: its credential is a run key, not an API key. */
  modelCall: boolean;
}

export interface CallerAuthenticators {
  /** The API keys in force (asked on every request: keys change live). */
  principals: () => PrincipalResolver;
  /** Agents' model calls; none = every model call is refused. */
  modelCalls?: ModelCallAuthenticator | undefined;
}

/**
 * Authenticates the caller from `credentials` (an `Authorization` header value) and records its principal and
 * parent run in the context. Returns undefined when accepted, else why it was refused.
 */
export function authenticateCaller(
  context: RequestContext,
  credentials: string | undefined,
  authenticators: CallerAuthenticators,
): CallerRefusal | undefined {
  const call = modelCallOf(context.request.socket);
  if (call) {
    const result = authenticators.modelCalls?.authenticate(call, bearerSecret(credentials));
    if (result?.kind !== 'accepted') return { reason: result?.kind ?? 'invalid', modelCall: true };
    context.principal = result.principal;
    context.parent = result.parent;
    return undefined;
  }
  const result = authenticators.principals().authenticate(credentials);
  switch (result.kind) {
    case 'open':
      return undefined;
    case 'accepted':
      context.principal = result.principal;
      return undefined;
    case 'missing':
    case 'invalid':
      return { reason: result.kind, modelCall: false };
    default: {
      const unreachable: never = result;
      return unreachable;
    }
  }
}
