// The principals each surface accepts, rebuilt when a config refresh changes `openai.api_keys` (key changes are
// live): surfaces ask for the current resolver on every request, so a removed key stops working at once and a new
// one works without a restart. Limits follow the principal by id, so a key whose rpm changed keeps its counters.
import type { EdgeConfig } from '@iop/config';
import {
  A2A_BEARER_PRINCIPAL_ID,
  createPrincipalResolver,
  unlimitedPrincipal,
  type PrincipalResolver,
} from './principal.js';

export interface KeyDirectory {
  /** `openai.api_keys`. */
  readonly openai: () => PrincipalResolver;
  /** `openai.api_keys` plus the `a2a.bearer_token` shortcut (an unlimited principal). */
  readonly a2a: () => PrincipalResolver;
  /** Takes the keys of an applied config refresh. */
  applyConfig(config: EdgeConfig): void;
}

export function createKeyDirectory(config: EdgeConfig): KeyDirectory {
  let openai = build(config, false);
  let a2a = build(config, true);
  // The bearer token is read at startup (a2a is a restart section); keys come from every applied refresh.
  const bearerToken = config.a2a.bearer_token;
  return {
    openai: () => openai,
    a2a: () => a2a,
    applyConfig(next) {
      openai = build(next, false);
      a2a = build({ ...next, a2a: { ...next.a2a, bearer_token: bearerToken } }, true);
    },
  };
}

function build(config: EdgeConfig, withBearer: boolean): PrincipalResolver {
  return createPrincipalResolver({
    keys: config.openai.api_keys,
    extra: withBearer
      ? [{ secret: config.a2a.bearer_token, principal: unlimitedPrincipal(A2A_BEARER_PRINCIPAL_ID) }]
      : [],
  });
}
