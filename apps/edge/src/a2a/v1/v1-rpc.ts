// The A2A 1.0 JSON-RPC methods over the one task manager: params are read in their 1.0 shape, translated to the
// engine's, and results and stream events translated back (v1-translation.ts). `tenant` is accepted on every
// method and ignored: an edge serves one tenant. Push-notification config methods go to push/push-rpc.ts.
import type { Principal } from '../../governance/principal.js';
import { JSON_RPC_ERRORS, JsonRpcError, type JsonRpcRequest } from '../json-rpc.js';
import type { RpcAnswer } from '../rpc-answer.js';
import { checkContextId, readBoolean, readCount, readObject, readString, readTaskId } from '../rpc-params.js';
import type { TaskManager } from '../task-manager.js';
import type { PushNotifications } from '../push/push-notifications.js';
import { attachSendPushConfig, handlePushRpc, readSendPushConfig } from '../push/push-rpc.js';
import { fromV1Message, fromV1State, toV1StreamResponse, toV1Task } from './v1-translation.js';
import type { V1ListTasksResponse } from './v1-types.js';

export interface V1RpcContext {
  tasks: TaskManager;
  principal?: Principal | undefined;
  traceparent?: string | undefined;
  /** Push notifications (push/push-notifications.ts); absent = not supported (-32003). */
  push?: PushNotifications | undefined;
}

export async function handleV1Rpc(
  rpc: JsonRpcRequest,
  context: V1RpcContext,
  answer: RpcAnswer,
): Promise<void> {
  const { tasks, principal, traceparent } = context;
  const params = rpc.params;
  readString(params['tenant'], 'params.tenant');
  switch (rpc.method) {
    case 'SendMessage': {
      const engineParams = sendParams(params);
      const configuration = readObject(params['configuration'], 'params.configuration');
      const returnImmediately =
        readBoolean(configuration['returnImmediately'], 'params.configuration.returnImmediately') ?? false;
      const historyLength = readCount(configuration['historyLength'], 'params.configuration.historyLength');
      const pushConfig = await readSendPushConfig(configuration, '1.0', context.push);
      const push = context.push;
      const task = await tasks.send(engineParams, {
        blocking: !returnImmediately,
        historyLength,
        principal,
        traceparent,
        ...(pushConfig && push
          ? { onCreated: (taskId: string) => attachSendPushConfig(push, principal, pushConfig, taskId) }
          : {}),
      });
      answer.result({ task: toV1Task(task) });
      return;
    }
    case 'SendStreamingMessage': {
      const engineParams = sendParams(params);
      const configuration = readObject(params['configuration'], 'params.configuration');
      const pushConfig = await readSendPushConfig(configuration, '1.0', context.push);
      const push = context.push;
      const onCreated =
        pushConfig && push
          ? (taskId: string) => attachSendPushConfig(push, principal, pushConfig, taskId)
          : undefined;
      await answer.stream(
        (signal) => tasks.stream(engineParams, signal, principal, traceparent, onCreated),
        toV1StreamResponse,
      );
      return;
    }
    case 'GetTask': {
      const id = readTaskId(params);
      const historyLength = readCount(params['historyLength'], 'params.historyLength');
      answer.result(toV1Task(await tasks.get(id, historyLength, principal)));
      return;
    }
    case 'ListTasks': {
      const pageSize = readCount(params['pageSize'], 'params.pageSize');
      const historyLength = readCount(params['historyLength'], 'params.historyLength');
      const includeArtifacts = readBoolean(params['includeArtifacts'], 'params.includeArtifacts');
      const contextId = readString(params['contextId'], 'params.contextId');
      const pageToken = readString(params['pageToken'], 'params.pageToken');
      const after = readString(params['statusTimestampAfter'], 'params.statusTimestampAfter');
      const state = fromV1State(params['status'], 'params.status');
      const page = tasks.list(
        {
          ...(contextId ? { contextId } : {}),
          ...(state ? { state } : {}),
          ...(after ? { statusTimestampAfter: after } : {}),
          ...(pageSize !== undefined ? { pageSize } : {}),
          ...(pageToken ? { pageToken } : {}),
          ...(historyLength !== undefined ? { historyLength } : {}),
          ...(includeArtifacts !== undefined ? { includeArtifacts } : {}),
        },
        principal,
      );
      const result: V1ListTasksResponse = {
        tasks: page.tasks.map(toV1Task),
        nextPageToken: page.nextPageToken,
        pageSize: page.pageSize,
        totalSize: page.totalSize,
      };
      answer.result(result);
      return;
    }
    case 'CancelTask': {
      const id = readTaskId(params);
      answer.result(toV1Task(await tasks.cancel(id, principal)));
      return;
    }
    case 'SubscribeToTask': {
      const id = readTaskId(params);
      await answer.stream((signal) => tasks.resubscribe(id, signal, principal), toV1StreamResponse);
      return;
    }
    case 'CreateTaskPushNotificationConfig':
    case 'GetTaskPushNotificationConfig':
    case 'ListTaskPushNotificationConfigs':
    case 'DeleteTaskPushNotificationConfig':
      if (!context.push) {
        throw new JsonRpcError(
          JSON_RPC_ERRORS.pushNotificationNotSupported,
          'push notifications are not supported',
        );
      }
      await handlePushRpc(rpc, context.push, principal, answer);
      return;
    case 'GetExtendedAgentCard':
      throw new JsonRpcError(
        JSON_RPC_ERRORS.extendedAgentCardNotConfigured,
        'this agent has no extended agent card',
      );
    default:
      throw new JsonRpcError(JSON_RPC_ERRORS.methodNotFound, `method ${rpc.method} not found`);
  }
}

/** A SendMessage request's message in the engine's (0.3) shape, its contextId checked. */
function sendParams(params: Record<string, unknown>): Record<string, unknown> {
  const engineParams = { message: fromV1Message(params['message']) };
  checkContextId(engineParams);
  return engineParams;
}
