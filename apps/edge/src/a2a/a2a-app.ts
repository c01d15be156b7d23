// The A2A HTTP surface: agent card at the well-known paths, JSON-RPC 2.0 at `path` (JSON answers and SSE
// streams). Protocol translation only: tasks are run by TaskManager through the edge service.
import express, { type Request, type Response } from 'express';
import {
  A2A_BEARER_PRINCIPAL_ID,
  createPrincipalResolver,
  unlimitedPrincipal,
  type Principal,
  type PrincipalResolver,
} from '../governance/principal.js';
import type { Logger } from '../logging.js';
import {
  httpMetricsMiddleware,
  markFirstToken,
  noHttpMetrics,
  type HttpMetricsRecorder,
} from '../metrics/http-metrics.js';
import { buildAgentCard } from './agent-card.js';
import type { StreamEvent } from './a2a-types.js';
import {
  JSON_RPC_ERRORS,
  JsonRpcError,
  errorRequestId,
  jsonRpcResult,
  parseJsonRpcRequest,
  retryAfterOf,
  toJsonRpcError,
  type JsonRpcId,
  type JsonRpcRequest,
} from './json-rpc.js';
import type { TaskManager } from './task-manager.js';
import { selectProtocol, V1_METHODS } from './protocol-version.js';
import type { RpcAnswer } from './rpc-answer.js';
import { checkContextId, readBoolean, readCount, readObject, readTaskId } from './rpc-params.js';
import { handleV1Rpc } from './v1/v1-rpc.js';
import type { PushNotifications } from './push/push-notifications.js';
import { attachSendPushConfig, handlePushRpc, readSendPushConfig } from './push/push-rpc.js';

export interface A2AAppOptions {
  path: string;
  /** The `a2a.bearer_token` shortcut; used when `principals` is not given. */
  bearerToken: string;
  /**
   * The keys in force, asked on every request (`openai.api_keys` plus the bearer-token shortcut, live key
   * changes); default: the bearer token alone.
   */
  principals?: () => PrincipalResolver;
  edgeId: string;
  version: string;
  adapter: string;
  target: string;
  /** Overrides the card's url; otherwise it is derived from the request's Host. */
  publicUrl?: string;
  tasks: TaskManager;
  logger: Logger;
  maxBodyBytes?: number;
  /** Request counts, durations and time to first artifact chunk (default: not recorded). */
  metrics?: HttpMetricsRecorder;
  /** Push notifications (push/push-notifications.ts); absent = the push methods answer -32003. */
  push?: PushNotifications;
}

/** Largest JSON-RPC body read (well under what one frame to a node carries). */
const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'];

/** JSON-RPC methods used as metric route labels; anything else is counted as `rpc other`. */
const RPC_METHODS = new Set([
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  ...V1_METHODS,
]);

interface RpcLocals {
  rpcMethod?: string;
  /** The caller's key once authenticated; undefined = anonymous (no key configured). */
  principal?: Principal;
}

/** Bounded metric route label: the card, `rpc <method>` for known methods, or `other`. */
function routeLabel(request: Request, response: Response, rpcPath: string): string {
  if (request.method === 'GET' && CARD_PATHS.includes(request.path)) return 'agent-card';
  if (request.method === 'POST' && request.path === rpcPath) {
    return `rpc ${(response.locals as RpcLocals).rpcMethod ?? 'other'}`;
  }
  return 'other';
}

export function createA2AApp(options: A2AAppOptions): express.Express {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const bearerOnly = createPrincipalResolver({
    keys: [],
    extra: [{ secret: options.bearerToken, principal: unlimitedPrincipal(A2A_BEARER_PRINCIPAL_ID) }],
  });
  const principals = options.principals ?? (() => bearerOnly);
  const app = express();
  app.disable('x-powered-by');
  app.use(
    httpMetricsMiddleware(options.metrics ?? noHttpMetrics, (request, response) =>
      routeLabel(request, response, options.path),
    ),
  );

  app.get(CARD_PATHS, (request, response) => {
    const url =
      options.publicUrl ?? `${request.protocol}://${request.get('host') ?? 'localhost'}${options.path}`;
    response.json(
      buildAgentCard({
        edgeId: options.edgeId,
        version: options.version,
        url,
        adapter: options.adapter,
        target: options.target,
        requiresToken: principals().required,
        pushNotifications: options.push !== undefined,
      }),
    );
  });

  app.post(
    options.path,
    // The token is checked before a byte of the body is read: an unauthenticated client gets 401 at once and the
    // connection is closed instead of draining what it sent (up to maxBodyBytes).
    (request, response, next) => {
      const result = principals().authenticate(request.get('authorization'));
      if (result.kind === 'open' || result.kind === 'accepted') {
        if (result.kind === 'accepted') (response.locals as RpcLocals).principal = result.principal;
        next();
        return;
      }
      response
        .status(401)
        .set('www-authenticate', 'Bearer')
        .set('connection', 'close')
        .json(
          toJsonRpcError(
            new JsonRpcError(JSON_RPC_ERRORS.invalidRequest, 'missing or invalid bearer token'),
            null,
          ),
        );
    },
    // A declared length over the limit is refused before reading (express.raw would answer only after draining).
    (request, response, next) => {
      if (Number(request.headers['content-length'] ?? 0) <= maxBodyBytes) {
        next();
        return;
      }
      response
        .status(413)
        .set('connection', 'close')
        .json(
          toJsonRpcError(
            new JsonRpcError(
              JSON_RPC_ERRORS.invalidRequest,
              `request body over the limit of ${maxBodyBytes} bytes`,
            ),
            null,
          ),
        );
    },
    express.raw({ type: () => true, limit: maxBodyBytes }),
    (request, response) => {
      void handleRpc(request, response, options);
    },
  );

  return app;
}

async function handleRpc(request: Request, response: Response, options: A2AAppOptions): Promise<void> {
  let id: JsonRpcId = null;
  try {
    const body = parseBody(request.body);
    let rpc: JsonRpcRequest;
    try {
      rpc = parseJsonRpcRequest(body);
    } catch (error) {
      id = errorRequestId(error, null);
      throw error;
    }
    id = rpc.id;
    if (RPC_METHODS.has(rpc.method)) (response.locals as RpcLocals).rpcMethod = rpc.method;
    const tasks = options.tasks;
    const principal = (response.locals as RpcLocals).principal;
    const traceparent = request.get('traceparent') || undefined;
    if (selectProtocol(rpc.method, request.get('a2a-version')) === '1.0') {
      await handleV1Rpc(rpc, { tasks, principal, traceparent, push: options.push }, rpcAnswer(response, id));
      return;
    }
    switch (rpc.method) {
      case 'message/send': {
        checkContextId(rpc.params);
        const configuration = readObject(rpc.params['configuration'], 'params.configuration');
        const blocking = readBoolean(configuration['blocking'], 'params.configuration.blocking') ?? true;
        const historyLength = readCount(configuration['historyLength'], 'params.configuration.historyLength');
        const pushConfig = await readSendPushConfig(configuration, '0.3', options.push);
        const push = options.push;
        const onCreated =
          pushConfig && push
            ? (taskId: string) => attachSendPushConfig(push, principal, pushConfig, taskId)
            : undefined;
        response.json(
          jsonRpcResult(
            id,
            await tasks.send(rpc.params, {
              blocking,
              historyLength,
              principal,
              traceparent,
              ...(onCreated ? { onCreated } : {}),
            }),
          ),
        );
        return;
      }
      case 'message/stream': {
        checkContextId(rpc.params);
        const configuration = readObject(rpc.params['configuration'], 'params.configuration');
        const pushConfig = await readSendPushConfig(configuration, '0.3', options.push);
        const push = options.push;
        const controller = streamController(response);
        const events = await tasks.stream(
          rpc.params,
          controller.signal,
          principal,
          traceparent,
          pushConfig && push
            ? (taskId: string) => attachSendPushConfig(push, principal, pushConfig, taskId)
            : undefined,
        );
        await writeStream(response, id, events, controller);
        return;
      }
      case 'tasks/get': {
        const taskId = readTaskId(rpc.params);
        const historyLength = readCount(rpc.params['historyLength'], 'params.historyLength');
        // Wherever the task is held: the service's run registry asks the other edges when this one has not it.
        const task = await tasks.get(taskId, historyLength, principal);
        response.json(jsonRpcResult(id, task));
        return;
      }
      case 'tasks/cancel': {
        const taskId = readTaskId(rpc.params);
        const task = await tasks.cancel(taskId, principal);
        response.json(jsonRpcResult(id, task));
        return;
      }
      case 'tasks/resubscribe': {
        const taskId = readTaskId(rpc.params);
        const controller = streamController(response);
        const events = await tasks.resubscribe(taskId, controller.signal, principal);
        await writeStream(response, id, events, controller);
        return;
      }
      case 'tasks/pushNotificationConfig/set':
      case 'tasks/pushNotificationConfig/get':
      case 'tasks/pushNotificationConfig/list':
      case 'tasks/pushNotificationConfig/delete':
        if (!options.push) {
          throw new JsonRpcError(
            JSON_RPC_ERRORS.pushNotificationNotSupported,
            'push notifications are not supported',
          );
        }
        await handlePushRpc(rpc, options.push, principal, rpcAnswer(response, id));
        return;
      default:
        throw new JsonRpcError(JSON_RPC_ERRORS.methodNotFound, `method ${rpc.method} not found`);
    }
  } catch (error) {
    if (!(error instanceof JsonRpcError)) {
      options.logger.error({ error: String(error) }, 'a2a request failed');
    }
    if (response.headersSent) {
      // A failure inside a stream: send it as the last event.
      if (!response.writableEnded) {
        response.write(`data: ${JSON.stringify(toJsonRpcError(error, id))}\n\n`);
        response.end();
      }
      return;
    }
    const retryAfter = retryAfterOf(error);
    if (retryAfter !== undefined) response.setHeader('retry-after', String(retryAfter));
    response.json(toJsonRpcError(error, id));
  }
}

function parseBody(raw: unknown): unknown {
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : '';
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new JsonRpcError(JSON_RPC_ERRORS.parseError, 'request body is not valid JSON');
  }
}

/** The answers of one call (the 1.0 handler's way to reply without knowing HTTP). */
function rpcAnswer(response: Response, id: JsonRpcId): RpcAnswer {
  return {
    result: (value) => {
      response.json(jsonRpcResult(id, value));
    },
    stream: async (open, toWire) => {
      const controller = streamController(response);
      await writeStream(response, id, await open(controller.signal), controller, toWire);
    },
  };
}

function streamController(response: Response): AbortController {
  const controller = new AbortController();
  response.on('close', () => controller.abort());
  return controller;
}

async function writeStream(
  response: Response,
  id: JsonRpcId,
  events: AsyncIterable<StreamEvent>,
  controller: AbortController,
  toWire: (event: StreamEvent) => unknown = (event) => event,
): Promise<void> {
  const iterator = events[Symbol.asyncIterator]();
  // The first event (the task) is produced synchronously or fails with a JSON-RPC error before headers go out.
  const first = await iterator.next();
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  try {
    let next = first;
    while (!next.done) {
      if (controller.signal.aborted) return;
      // The first artifact chunk is the first generated output the client sees.
      if (next.value.kind === 'artifact-update') markFirstToken(response);
      // A client that reads slowly holds the stream back here instead of growing the socket's buffer.
      if (!response.write(`data: ${JSON.stringify(jsonRpcResult(id, toWire(next.value)))}\n\n`)) {
        await drained(response, controller.signal);
      }
      next = await iterator.next();
    }
  } finally {
    await iterator.return?.();
    if (!response.writableEnded) response.end();
  }
}

/** Resolves on 'drain' or when the client went away. */
function drained(response: Response, signal: AbortSignal): Promise<void> {
  if (signal.aborted || response.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    response.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
