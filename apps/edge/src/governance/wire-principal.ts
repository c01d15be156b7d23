// A principal as it crosses to another edge (JSON): the owning edge checks the same key's allow-list and limits,
// and queues the run under the key's fair share (weight, priority). An edge that predates fair share sends neither:
// the defaults apply, as for a key that names none. Values out of range (a buggy or older peer) fall back too.
import { DEFAULTS, LIMITS, type KeyPriority } from '@iop/config';
import type { Principal } from './principal.js';

export interface WirePrincipal {
  id: string;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  tokenBudget: Principal['tokenBudget'];
  weight?: number;
  priority?: KeyPriority;
}

export function toWirePrincipal(principal: Principal): WirePrincipal {
  return {
    id: principal.id,
    models: principal.models ? [...principal.models] : null,
    rpm: principal.rpm,
    tpm: principal.tpm,
    maxConcurrent: principal.maxConcurrent,
    tokenBudget: principal.tokenBudget,
    weight: principal.weight,
    priority: principal.priority,
  };
}

export function fromWirePrincipal(principal: WirePrincipal): Principal {
  return {
    id: principal.id,
    models: principal.models ? new Set(principal.models) : undefined,
    rpm: principal.rpm,
    tpm: principal.tpm,
    maxConcurrent: principal.maxConcurrent,
    tokenBudget: principal.tokenBudget,
    weight: wireWeight(principal.weight),
    priority: principal.priority === 'batch' ? 'batch' : DEFAULTS.key_priority,
  };
}

function wireWeight(weight: unknown): number {
  const { min, max } = LIMITS.key_weight;
  return typeof weight === 'number' && Number.isInteger(weight) && weight >= min && weight <= max
    ? weight
    : DEFAULTS.key_weight;
}
