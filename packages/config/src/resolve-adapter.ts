// Resolves a provider's `adapter` reference to one adapter instance of its node. Rule (config contract): an
// exact instance name wins; a bare type name is accepted only when exactly one enabled instance of that type
// exists, so adding a second instance can never silently re-route a provider.
import { ADAPTER_TYPES, type AdapterInstanceConfig, type AdapterType } from './types.js';

export type AdapterResolution =
  | { readonly ok: true; readonly instance: AdapterInstanceConfig }
  | { readonly ok: false; readonly reason: string };

export function resolveAdapterReference(
  instances: readonly AdapterInstanceConfig[],
  reference: string,
): AdapterResolution {
  const exact = instances.find((instance) => instance.name === reference);
  if (exact) {
    return exact.enabled
      ? { ok: true, instance: exact }
      : { ok: false, reason: `adapter instance '${reference}' is disabled` };
  }
  if (isAdapterType(reference)) {
    const candidates = instances.filter((instance) => instance.type === reference && instance.enabled);
    const [only] = candidates;
    if (candidates.length === 1 && only) return { ok: true, instance: only };
    if (candidates.length === 0)
      return { ok: false, reason: `no enabled ${reference} adapter instance on this node` };
    return {
      ok: false,
      reason:
        `'${reference}' is ambiguous: ${candidates.length} enabled ${reference} instances ` +
        `(${candidates.map((instance) => instance.name).join(', ')}); name one of them`,
    };
  }
  const names = instances.map((instance) => instance.name);
  return {
    ok: false,
    reason: `no adapter instance named '${reference}' on this node (instances: ${names.length > 0 ? names.join(', ') : 'none'})`,
  };
}

function isAdapterType(value: string): value is AdapterType {
  return (ADAPTER_TYPES as readonly string[]).includes(value);
}
