// Typed errors of the node layer (store, link). Callers switch on `code`.
import { typedError, type FaultTable } from '@iop/errors';

export type NodeStoreErrorCode =
  'invalid_node_id' | 'store_unreadable' | 'store_unwritable' | 'store_corrupt';

const STORE_FAULT: FaultTable<NodeStoreErrorCode> = {
  invalid_node_id: 'caller',
  store_unreadable: 'transient',
  store_unwritable: 'transient',
  store_corrupt: 'caller',
};

export class NodeStoreError extends typedError('NodeStoreError', STORE_FAULT) {}

export type NodeLinkErrorCode =
  'link_closed' | 'request_timeout' | 'request_aborted' | 'send_failed' | 'duplicate_run';

const LINK_FAULT: FaultTable<NodeLinkErrorCode> = {
  link_closed: 'transient',
  request_timeout: 'transient',
  request_aborted: 'caller',
  send_failed: 'transient',
  duplicate_run: 'caller',
};

export class NodeLinkError extends typedError('NodeLinkError', LINK_FAULT) {}
