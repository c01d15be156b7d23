// Whether a provider's backend holds a model loaded ("resident"), from the resident list its node reports with
// health (Ollama /api/ps). The pool prefers a provider where the run's model is resident among equally loaded
// candidates and counts a dispatch where it is known not to be as a cold load.
import type { ProviderHealthSummary } from '../present/node-summary.js';

/** A provider's health report as the pool reads it (the node's last report for that provider id). */
export interface ResidentReport {
  readonly providers: readonly ProviderHealthSummary[];
}

/**
 * true = the node's fresh report lists `model` loaded on `providerId`; false = its fresh report does not;
 * undefined = unknown (no report, an older node, a backend that cannot say, or a stale list): no preference.
 */
export function isResident(node: ResidentReport, providerId: string, model: string): boolean | undefined {
  const resident = node.providers.find((entry) => entry.providerId === providerId)?.resident;
  if (!resident || resident.state !== 'fresh') return undefined;
  return listsModel(resident.models, model);
}

/** The served models of a provider that its backend's last list (fresh or stale) holds loaded. */
export function residentServedModels(
  resident: ProviderHealthSummary['resident'],
  served: readonly string[],
): string[] {
  if (!resident) return [];
  return served.filter((model) => listsModel(resident.models, model));
}

/** Ollama names without a tag mean `:latest`: `llama3.2` and `llama3.2:latest` are one model. */
function listsModel(models: readonly string[], model: string): boolean {
  const wanted = withTag(model);
  return models.some((name) => withTag(name) === wanted);
}

function withTag(name: string): string {
  return name.includes(':') ? name : `${name}:latest`;
}
