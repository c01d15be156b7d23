// The A2A HTTP surface: agent card at the well-known paths, JSON-RPC 2.0 at `path` (JSON answers and SSE
// streams). Protocol translation only: tasks are run by TaskManager through the edge service. The HTTP-level
// parts come from the surface kit (../surface-kit): the caller's authentication, the bounded JSON body reader,
// the SSE writer, the connection's disconnect signal and the error answer; the JSON-RPC envelope is A2A's own
// (json-rpc.ts, a2a-failure.ts).
import express, { type Request, type Response } from 'express';
import {
  A2A_BEARER_PRINCIPAL_ID,
  createPrincipalResolver,
  unlimitedPrincipal,
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
  toJsonRpcError,
  type JsonRpcId,
  type JsonRpcRequest,
} from './json-rpc.js';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';
import { sendErrorResponse } from '../surface-kit/error-response.js';
import { readJsonBody } from '../surface-kit/json-body.js';
import { writeJson } from '../surface-kit/json-response.js';
import { authenticateCaller, type RequestContext } from '../surface-kit/request-context.js';
import { SseSink } from '../surface-kit/sse-sink.js';
import { mapA2AFailure, unauthorized } from './a2a-failure.js';
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
    writeJson(
      response,
      200,
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

  app.post(options.path, (request, response) => {
    const context: RequestContext = { request, response, arrivedAt: performance.now() };
    // The token is checked before a byte of the body is read: an unauthenticated client gets 401 at once and the
    // connection is closed instead of draining what it sent (up to maxBodyBytes).
    if (authenticateCaller(context, request.get('authorization'), { principals })) {
      sendFailure(unauthorized(), null, context, options.logger);
      return;
    }
    void handleRpc(context, options, maxBodyBytes);
  });

  return app;
}

/** Answers a failure before any stream started: the JSON-RPC error object, at the HTTP status A2A gives it. */
function sendFailure(error: unknown, id: JsonRpcId, context: RequestContext, logger: Logger): void {
  sendErrorResponse(error, mapA2AFailure(error, id), {
    surface: 'a2a',
    logger,
    response: context.response,
    path: (context.request as Request).path,
  });
}

async function handleRpc(
  context: RequestContext,
  options: A2AAppOptions,
  maxBodyBytes: number,
): Promise<void> {
  const request = context.request as Request;
  const response = context.response as Response;
  let id: JsonRpcId = null;
  try {
    const body = await readJsonBody(request, maxBodyBytes, { emptyAsObject: false });
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
    const principal = context.principal;
    const traceparent = request.get('traceparent') || undefined;
    const answer = rpcAnswer(context, id, options.logger);
    if (selectProtocol(rpc.method, request.get('a2a-version')) === '1.0') {
      await handleV1Rpc(rpc, { tasks, principal, traceparent, push: options.push }, answer);
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
        answer.result(
          await tasks.send(rpc.params, {
            blocking,
            historyLength,
            principal,
            traceparent,
            ...(onCreated ? { onCreated } : {}),
          }),
        );
        return;
      }
      case 'message/stream': {
        checkContextId(rpc.params);
        const configuration = readObject(rpc.params['configuration'], 'params.configuration');
        const pushConfig = await readSendPushConfig(configuration, '0.3', options.push);
        const push = options.push;
        const onCreated =
          pushConfig && push
            ? (taskId: string) => attachSendPushConfig(push, principal, pushConfig, taskId)
            : undefined;
        await answer.stream((signal) => tasks.stream(rpc.params, signal, principal, traceparent, onCreated));
        return;
      }
      case 'tasks/get': {
        const taskId = readTaskId(rpc.params);
        const historyLength = readCount(rpc.params['historyLength'], 'params.historyLength');
        // Wherever the task is held: the service's run registry asks the other edges when this one has not it.
        answer.result(await tasks.get(taskId, historyLength, principal));
        return;
      }
      case 'tasks/cancel': {
        const taskId = readTaskId(rpc.params);
        answer.result(await tasks.cancel(taskId, principal));
        return;
      }
      case 'tasks/resubscribe': {
        const taskId = readTaskId(rpc.params);
        await answer.stream((signal) => tasks.resubscribe(taskId, signal, principal));
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
        await handlePushRpc(rpc, options.push, principal, answer);
        return;
      default:
        throw new JsonRpcError(JSON_RPC_ERRORS.methodNotFound, `method ${rpc.method} not found`);
    }
  } catch (error) {
    logUnexpected(error, options.logger);
    sendFailure(error, id, context, options.logger);
  }
}

/** A failure that is not a JSON-RPC answer by design (a bug, a service refusal) is logged as an error. */
function logUnexpected(error: unknown, logger: Logger): void {
  if (!(error instanceof JsonRpcError)) logger.error({ error: String(error) }, 'a2a request failed');
}

/** The answers of one call (the method handlers' way to reply without knowing HTTP). */
function rpcAnswer(context: RequestContext, id: JsonRpcId, logger: Logger): RpcAnswer {
  return {
    result: (value) => {
      writeJson(context.response, 200, jsonRpcResult(id, value));
    },
    stream: async (open, toWire) => {
      const signal = disconnectSignal(context.request.socket);
      await writeStream(context, id, await open(signal), signal, logger, toWire);
    },
  };
}

async function writeStream(
  context: RequestContext,
  id: JsonRpcId,
  events: AsyncIterable<StreamEvent>,
  signal: AbortSignal,
  logger: Logger,
  toWire: (event: StreamEvent) => unknown = (event) => event,
): Promise<void> {
  const iterator = events[Symbol.asyncIterator]();
  // The first event (the task) is produced synchronously or fails with a JSON-RPC error before the head goes out.
  const first = await iterator.next();
  // A client that reads slowly holds the stream back in the sink instead of growing the socket's buffer.
  const sink = new SseSink(context.response, signal, () => ({}));
  sink.start();
  try {
    let next = first;
    while (!next.done) {
      if (sink.closed) return;
      // The first artifact chunk is the first generated output the client sees.
      if (next.value.kind === 'artifact-update') markFirstToken(context.response as Response);
      await sink.write(sseData(jsonRpcResult(id, toWire(next.value))));
      next = await iterator.next();
    }
  } catch (error) {
    // A failure inside a stream: sent as its last event.
    logUnexpected(error, logger);
    await sink.write(sseData(toJsonRpcError(error, id)));
  } finally {
    await iterator.return?.();
    sink.end();
  }
}

function sseData(message: unknown): string {
  return `data: ${JSON.stringify(message)}\n\n`;
}
