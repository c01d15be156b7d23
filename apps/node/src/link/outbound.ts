// What the runner and health monitor need from the link: a way to send envelopes to the edge. Sending while the
// link is down drops the message (the edge ends runs of a lost node itself) and resolves false.
import type { Envelope } from '@iop/wire';

export interface Outbound {
  send(message: Envelope): Promise<boolean>;
}
