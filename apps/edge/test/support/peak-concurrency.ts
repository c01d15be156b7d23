// How many of a fake backend's requests were open at the same moment, computed exactly from their timestamps
// (the capacity checks of the cross-process suites count at the backend).
import type { RecordedRequest } from '@iop/testkit';

export function peakConcurrency(requests: RecordedRequest[]): number {
  const points: [number, number][] = [];
  for (const request of requests) {
    points.push([request.receivedAt, 1]);
    points.push([request.closedAt ?? Number.MAX_SAFE_INTEGER, -1]);
  }
  // At equal times an end counts before a start (a slot freed and reused in the same millisecond).
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let peak = 0;
  for (const [, delta] of points) {
    open += delta;
    peak = Math.max(peak, open);
  }
  return peak;
}
