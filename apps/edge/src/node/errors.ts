// Typed errors of the node layer (store, link). Callers switch on `code`.
import type { ErrorFault } from '../fault.js';

export type NodeStoreErrorCode =
  'invalid_node_id' | 'store_unreadable' | 'store_unwritable' | 'store_corrupt';

const STORE_FAULT: Record<NodeStoreErrorCode, ErrorFault> = {
  invalid_node_id: 'caller',
  store_unreadable: 'transient',
  store_unwritable: 'transient',
  store_corrupt: 'caller',
};

export class NodeStoreError extends Error {
  override readonly name = 'NodeStoreError';
  readonly fault: ErrorFault;

  constructor(
    readonly code: NodeStoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.fault = STORE_FAULT[code];
  }
}

export type NodeLinkErrorCode =
  'link_closed' | 'request_timeout' | 'request_aborted' | 'send_failed' | 'duplicate_run';

const LINK_FAULT: Record<NodeLinkErrorCode, ErrorFault> = {
  link_closed: 'transient',
  request_timeout: 'transient',
  request_aborted: 'caller',
  send_failed: 'transient',
  duplicate_run: 'caller',
};

export class NodeLinkError extends Error {
  override readonly name = 'NodeLinkError';
  readonly fault: ErrorFault;

  constructor(
    readonly code: NodeLinkErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.fault = LINK_FAULT[code];
  }
}
