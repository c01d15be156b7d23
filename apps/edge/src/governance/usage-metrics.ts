// `iop_tokens_total{key,model,direction}`: the tokens of finished runs as the backend reported them, and
// `iop_key_refusals_total{key,limit}`: requests a key's limits refused, on the edge's Prometheus registry. Label sets are bounded whatever callers send: key ids come from edge.yaml (anonymous runs
// are `anonymous`), and past MAX_KEYS keys or MAX_MODELS models new values are counted under `other`.
import { Counter, type Registry } from 'prom-client';
import { cellCounter } from '../metrics/counter-cells.js';
import type { GovernanceLimit } from './errors.js';
import type { UsageRecord } from './usage-store.js';

const MAX_KEYS = 1100;
const MAX_MODELS = 256;
export const OTHER_LABEL = 'other';
export const ANONYMOUS_LABEL = 'anonymous';

export interface UsageMetrics {
  record(record: UsageRecord): void;
  /** A request refused by one of the key's limits (`rpm`, `tpm`, `max_concurrent`, `token_budget`, `models`). */
  refused(principal: string, limit: GovernanceLimit): void;
}

export function createUsageMetrics(registry: Registry): UsageMetrics {
  // Counted per run: through cached label cells (moved into the counter at scrape), not prom-client's inc.
  const tokens = cellCounter({
    name: 'iop_tokens_total',
    help: 'Tokens of finished runs as the backend reported them, by API key, model and direction (in/out).',
    labelNames: ['key', 'model', 'direction'] as const,
    registers: [registry],
  }).cells;
  const refusals = new Counter({
    name: 'iop_key_refusals_total',
    help: "Requests refused by an API key's limits, by key and limit (rpm, tpm, max_concurrent, token_budget, models).",
    labelNames: ['key', 'limit'],
    registers: [registry],
  });
  const keys = new BoundedLabel(MAX_KEYS);
  const models = new BoundedLabel(MAX_MODELS);
  return {
    record(record) {
      if (record.inputTokens === 0 && record.outputTokens === 0) return;
      const key = keys.label(record.principal === '' ? ANONYMOUS_LABEL : record.principal);
      const model = models.label(record.model);
      if (record.inputTokens > 0) tokens.cell(key, model, 'in').inc(record.inputTokens);
      if (record.outputTokens > 0) tokens.cell(key, model, 'out').inc(record.outputTokens);
    },
    refused(principal, limit) {
      refusals.inc({ key: keys.label(principal), limit });
    },
  };
}

/** The first `max` distinct values keep their name; later ones are `other`. */
class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}

  label(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(value);
    return value;
  }
}
