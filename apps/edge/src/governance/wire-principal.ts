// A principal as it crosses to another edge (JSON): the owning edge checks the same key's allow-list and limits.
import type { Principal } from '../governance/principal.js';

export interface WirePrincipal {
  id: string;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  tokenBudget: Principal['tokenBudget'];
}

export function toWirePrincipal(principal: Principal): WirePrincipal {
  return {
    id: principal.id,
    models: principal.models ? [...principal.models] : null,
    rpm: principal.rpm,
    tpm: principal.tpm,
    maxConcurrent: principal.maxConcurrent,
    tokenBudget: principal.tokenBudget,
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
  };
}
