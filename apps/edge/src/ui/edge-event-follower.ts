// What the dashboard learns from the edge's event bus for as long as it runs: every run event into the run log
// (replay: runs that started just before the dashboard did), each node's console label as it connects, and the
// latest node departures (at most DEPARTURES_KEPT). `close()` ends the subscription and resolves when the loop has.
import type { UiDeparture } from '@iop/ui-api';
import type { ClosableEventBus } from '../events/event-bus.js';
import type { Logger } from '../logging.js';
import type { NodeLabels } from '../present/node-labels.js';
import type { RunLog } from './run-log.js';

const DEPARTURES_KEPT = 20;

export interface EdgeEventFollower {
  /** The latest departures, newest first (copies). */
  departures(): UiDeparture[];
  close(): Promise<void>;
}

export function followEdgeEvents(
  events: ClosableEventBus,
  runLog: Pick<RunLog, 'record'>,
  labels: NodeLabels,
  logger: Logger,
): EdgeEventFollower {
  const departures: UiDeparture[] = [];
  const subscription = events.subscribe({ replay: true });
  const following = (async () => {
    for await (const event of subscription) {
      if (event.type === 'run') {
        try {
          runLog.record(event.event);
        } catch (error) {
          // One malformed event must not stop the dashboard's feed.
          logger.warn({ run: event.event.runId, error: String(error) }, 'ui: run event not recorded');
        }
      } else if (event.event.kind === 'connected') labels.labelFor(event.event.nodeId);
      else if (event.event.kind === 'disconnected') {
        departures.unshift({
          node_id: event.event.nodeId,
          alias: event.event.alias,
          reason: event.event.reason,
          at_ms: event.event.atUnixMs,
        });
        departures.length = Math.min(departures.length, DEPARTURES_KEPT);
      }
    }
  })();
  return {
    departures: () => departures.map((entry) => ({ ...entry })),
    async close() {
      subscription.close();
      await following;
    },
  };
}
