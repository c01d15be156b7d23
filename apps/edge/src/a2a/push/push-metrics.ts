// `iop_a2a_push_deliveries_total{result}`: notification attempts by what came of them — delivered, retried (an
// attempt failed and another is scheduled), failed (given up: attempts or retry window used up, or the webhook
// refused it) and refused (the target check refused the URL: when a config was set, or before an attempt).
import { Counter, type Registry } from 'prom-client';

export type PushDeliveryResult = 'delivered' | 'retried' | 'failed' | 'refused';

export interface PushMetrics {
  delivery(result: PushDeliveryResult): void;
}

export const noPushMetrics: PushMetrics = { delivery: () => undefined };

export function registerPushMetrics(registry: Registry): PushMetrics {
  const deliveries = new Counter({
    name: 'iop_a2a_push_deliveries_total',
    help: 'A2A push notification attempts by result (delivered, retried, failed, refused).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of ['delivered', 'retried', 'failed', 'refused'] as const) deliveries.inc({ result }, 0);
  return { delivery: (result) => deliveries.inc({ result }) };
}
