// The push-notification config methods of both protocol versions over PushNotifications: 0.3
// `tasks/pushNotificationConfig/{set,get,list,delete}` and 1.0 `{Create,Get,Delete}TaskPushNotificationConfig`,
// `ListTaskPushNotificationConfigs`; plus the config a send carries (0.3 `configuration.pushNotificationConfig`,
// 1.0 `configuration.taskPushNotificationConfig`), whose target is checked before the task is created and which
// is registered as soon as the task exists.
import type { Principal } from '../../governance/principal.js';
import { JSON_RPC_ERRORS, JsonRpcError, type JsonRpcRequest } from '../json-rpc.js';
import type { RpcAnswer } from '../rpc-answer.js';
import { readCount, readObject, readString } from '../rpc-params.js';
import {
  readPushTaskId,
  readV03PushConfig,
  readV1PushConfig,
  toV03PushConfig,
  toV1PushConfig,
  type PushConfig,
} from './push-config.js';
import type { PushNotifications } from './push-notifications.js';

/** Placeholder task id while a send's config is checked (the task does not exist yet). */
const PENDING_TASK = 'pending';

export async function handlePushRpc(
  rpc: JsonRpcRequest,
  push: PushNotifications,
  principal: Principal | undefined,
  answer: RpcAnswer,
): Promise<void> {
  const owner = principal?.id ?? '';
  const params = rpc.params;
  switch (rpc.method) {
    case 'tasks/pushNotificationConfig/set': {
      const taskId = readPushTaskId(params, 'taskId');
      const config = readV03PushConfig(
        params['pushNotificationConfig'],
        taskId,
        'params.pushNotificationConfig',
      );
      await push.checkTarget(config, 'params.pushNotificationConfig.url');
      answer.result(toV03PushConfig(push.set(owner, config)));
      return;
    }
    case 'tasks/pushNotificationConfig/get': {
      const taskId = readPushTaskId(params, 'id');
      const configId = readString(params['pushNotificationConfigId'], 'params.pushNotificationConfigId');
      answer.result(toV03PushConfig(push.get(owner, taskId, configId || undefined)));
      return;
    }
    case 'tasks/pushNotificationConfig/list': {
      const taskId = readPushTaskId(params, 'id');
      answer.result(push.list(owner, taskId).map(toV03PushConfig));
      return;
    }
    case 'tasks/pushNotificationConfig/delete': {
      const taskId = readPushTaskId(params, 'id');
      const configId = readString(params['pushNotificationConfigId'], 'params.pushNotificationConfigId');
      push.delete(owner, taskId, configId || taskId);
      answer.result(null);
      return;
    }
    case 'CreateTaskPushNotificationConfig': {
      const config = readV1PushConfig(params, undefined, 'params');
      await push.checkTarget(config, 'params.url');
      answer.result(toV1PushConfig(push.set(owner, config)));
      return;
    }
    case 'GetTaskPushNotificationConfig': {
      const taskId = readPushTaskId(params, 'taskId');
      const configId = readString(params['id'], 'params.id');
      answer.result(toV1PushConfig(push.get(owner, taskId, configId || undefined)));
      return;
    }
    case 'ListTaskPushNotificationConfigs': {
      const taskId = readPushTaskId(params, 'taskId');
      const pageSize = readCount(params['pageSize'], 'params.pageSize');
      const configs = push.list(owner, taskId).map(toV1PushConfig);
      // At most MAX_CONFIGS_PER_TASK configs: one page holds them all.
      answer.result({ configs: pageSize ? configs.slice(0, pageSize) : configs, nextPageToken: '' });
      return;
    }
    case 'DeleteTaskPushNotificationConfig': {
      const taskId = readPushTaskId(params, 'taskId');
      const configId = readString(params['id'], 'params.id');
      push.delete(owner, taskId, configId || taskId);
      answer.result({});
      return;
    }
    default:
      throw new JsonRpcError(JSON_RPC_ERRORS.methodNotFound, `method ${rpc.method} not found`);
  }
}

/**
 * The push config a send carries, its target checked; undefined when it carries none. Refused when push
 * notifications are not served (-32003).
 */
export async function readSendPushConfig(
  configuration: Record<string, unknown>,
  protocol: '0.3' | '1.0',
  push: PushNotifications | undefined,
): Promise<PushConfig | undefined> {
  const field = protocol === '0.3' ? 'pushNotificationConfig' : 'taskPushNotificationConfig';
  const value = configuration[field];
  if (value === undefined || value === null) return undefined;
  if (!push) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.pushNotificationNotSupported,
      'push notifications are not supported',
    );
  }
  const where = `params.configuration.${field}`;
  const config =
    protocol === '0.3'
      ? readV03PushConfig(value, PENDING_TASK, where)
      : readV1PushConfig(
          readObject({ ...readObject(value, where), taskId: undefined }, where),
          PENDING_TASK,
          where,
        );
  await push.checkTarget(config, `${where}.url`);
  return config;
}

/** Registers a send's config for the task the send created. */
export function attachSendPushConfig(
  push: PushNotifications,
  principal: Principal | undefined,
  config: PushConfig,
  taskId: string,
): void {
  push.set(principal?.id ?? '', { ...config, taskId, id: config.id === PENDING_TASK ? taskId : config.id });
}
