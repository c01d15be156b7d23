// Builds the push-notification parts of the A2A surface from `a2a.push` (config reference: docs/configuration.md)
// over a push store: the target check, the sender, the outbox and the config/watch service. The caller starts it
// after the task kind's restart recovery is registered, and closes it with the surface.
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logging.js';
import type { RunRegistry } from '../../service/run-registry.js';
import { noPushMetrics, type PushMetrics } from './push-metrics.js';
import { PushNotifications } from './push-notifications.js';
import { PushOutbox } from './push-outbox.js';
import { createPushSender, type PushSender } from './push-sender.js';
import type { PushStore } from './push-store.js';
import { createPushTargetCheck, type PushTargetPolicy } from './push-target.js';

export interface PushSettings {
  /** `a2a.push.allow_hosts`. */
  allowHosts: readonly string[];
  maxAttempts: number;
  retryWindowMs: number;
  timeoutMs: number;
}

export interface PushSetupOptions {
  settings: PushSettings;
  store: PushStore;
  registry: RunRegistry;
  clock: Clock;
  logger: Logger;
  userAgent: string;
  metrics?: PushMetrics;
  /** Tests: the address check and resolver of the target check. */
  policy?: Omit<PushTargetPolicy, 'allowHosts'>;
  /** Tests: another sender. */
  send?: PushSender;
}

export function createPushNotifications(options: PushSetupOptions): PushNotifications {
  const { settings, store, clock, logger } = options;
  const metrics = options.metrics ?? noPushMetrics;
  const check = createPushTargetCheck({ ...options.policy, allowHosts: settings.allowHosts });
  const send =
    options.send ?? createPushSender({ clock, timeoutMs: settings.timeoutMs, userAgent: options.userAgent });
  const outbox = new PushOutbox({
    store,
    clock,
    check,
    send,
    metrics,
    logger,
    maxAttempts: settings.maxAttempts,
    retryWindowMs: settings.retryWindowMs,
  });
  return new PushNotifications({ store, registry: options.registry, outbox, check, metrics, clock, logger });
}
