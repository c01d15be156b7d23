// ListTasks over one key's tasks: filters (context, state, status time), newest first, page by page. The page
// token is opaque to clients: the id of the last task of the previous page, base64url-encoded.
import type { Task, TaskState } from './a2a-types.js';
import { JSON_RPC_ERRORS, JsonRpcError } from './json-rpc.js';

export const DEFAULT_LIST_PAGE_SIZE = 50;
export const MAX_LIST_PAGE_SIZE = 100;

export interface TaskListQuery {
  contextId?: string;
  state?: TaskState;
  /** Only tasks whose status changed after this instant (ISO 8601). */
  statusTimestampAfter?: string;
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  /** Artifacts are left out unless asked for. */
  includeArtifacts?: boolean;
}

export interface TaskListPage {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

/** One page of `newestFirst` (the caller's own tasks) under `query`. */
export function pageTasks(newestFirst: readonly Task[], query: TaskListQuery): TaskListPage {
  const pageSize = query.pageSize ?? DEFAULT_LIST_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_LIST_PAGE_SIZE) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.invalidParams,
      `params.pageSize must be an integer from 1 to ${MAX_LIST_PAGE_SIZE}`,
    );
  }
  const after = query.statusTimestampAfter === undefined ? undefined : Date.parse(query.statusTimestampAfter);
  if (after !== undefined && Number.isNaN(after)) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.invalidParams,
      'params.statusTimestampAfter must be an ISO 8601 timestamp',
    );
  }
  const matching = newestFirst.filter(
    (task) =>
      (query.contextId === undefined || task.contextId === query.contextId) &&
      (query.state === undefined || task.status.state === query.state) &&
      (after === undefined || Date.parse(task.status.timestamp ?? '') > after),
  );
  let start = 0;
  if (query.pageToken !== undefined && query.pageToken !== '') {
    const lastId = decodeToken(query.pageToken);
    const index = matching.findIndex((task) => task.id === lastId);
    if (index < 0) {
      throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, 'params.pageToken is unknown or expired');
    }
    start = index + 1;
  }
  const page = matching.slice(start, start + pageSize);
  const last = page[page.length - 1];
  const more = start + page.length < matching.length;
  return {
    tasks: page.map((task) => shaped(task, query)),
    nextPageToken: more && last ? Buffer.from(last.id, 'utf8').toString('base64url') : '',
    pageSize,
    totalSize: matching.length,
  };
}

function decodeToken(token: string): string {
  return Buffer.from(token, 'base64url').toString('utf8');
}

function shaped(task: Task, query: TaskListQuery): Task {
  const copy: Task = structuredClone(task);
  if (!query.includeArtifacts) delete copy.artifacts;
  if (query.historyLength !== undefined && copy.history) {
    copy.history = query.historyLength <= 0 ? [] : copy.history.slice(-query.historyLength);
  }
  return copy;
}
