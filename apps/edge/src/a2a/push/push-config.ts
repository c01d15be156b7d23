// A task's push-notification config (a webhook) in the edge's one shape, read from and written to both protocol
// versions: 0.3 `TaskPushNotificationConfig { taskId, pushNotificationConfig: { id, url, token, authentication:
// { schemes, credentials } } }` and 1.0's flat `TaskPushNotificationConfig { taskId, id, url, token,
// authentication: { scheme, credentials } }`. Which version registered a config decides the body its deliveries
// carry (push-payload.ts). Params are checked here (invalid params, -32602, naming the field); the target URL is
// checked by push-target.ts.
import { JSON_RPC_ERRORS, JsonRpcError } from '../json-rpc.js';
import type { A2AProtocol } from '../protocol-version.js';
import { readObject, readString } from '../rpc-params.js';

export interface PushAuthentication {
  /** The Authorization scheme (`Bearer`, `Basic`, ...). */
  scheme: string;
  credentials: string;
}

export interface PushConfig {
  /** The config's id within its task (the client's, or the task id when it gave none, as the spec says). */
  id: string;
  taskId: string;
  url: string;
  /** Sent as `X-A2A-Notification-Token` with every notification. */
  token?: string;
  /** Sent as `Authorization: <scheme> <credentials>`. */
  authentication?: PushAuthentication;
  /** The protocol version that registered it: the shape of its notifications. */
  protocol: A2AProtocol;
}

/** What a client may send as one config id or task id (it is stored and echoed). */
const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_URL_LENGTH = 2048;
const MAX_SECRET_LENGTH = 4096;

function invalid(message: string): JsonRpcError {
  return new JsonRpcError(JSON_RPC_ERRORS.invalidParams, message);
}

function readId(value: unknown, where: string): string | undefined {
  const id = readString(value, where);
  if (id === undefined || id === '') return undefined;
  if (!ID_PATTERN.test(id)) throw invalid(`${where} must be 1-128 letters, digits, ".", "_", ":" or "-"`);
  return id;
}

function readUrl(value: unknown, where: string): string {
  const url = readString(value, where);
  if (url === undefined || url === '') throw invalid(`${where} is required`);
  if (url.length > MAX_URL_LENGTH) throw invalid(`${where} is longer than ${MAX_URL_LENGTH} characters`);
  return url;
}

function readSecret(value: unknown, where: string): string | undefined {
  const secret = readString(value, where);
  if (secret === undefined || secret === '') return undefined;
  if (secret.length > MAX_SECRET_LENGTH || /[\r\n\0]/.test(secret)) {
    throw invalid(`${where} must be at most ${MAX_SECRET_LENGTH} characters without line breaks`);
  }
  return secret;
}

function readScheme(value: unknown, where: string): string {
  const scheme = readString(value, where);
  if (scheme === undefined || !/^[A-Za-z][A-Za-z0-9._~+-]{0,63}$/.test(scheme)) {
    throw invalid(`${where} must be an HTTP authorization scheme such as "Bearer"`);
  }
  return scheme;
}

/** The task id of a 0.3 `tasks/pushNotificationConfig/*` call (`taskId` for set, `id` for the others). */
export function readPushTaskId(params: Record<string, unknown>, field: 'id' | 'taskId'): string {
  const id = readId(params[field], `params.${field}`);
  if (id === undefined) throw invalid(`params.${field} must be a non-empty string`);
  return id;
}

/** 0.3: a `PushNotificationConfig` (`configuration.pushNotificationConfig` or a set's `pushNotificationConfig`). */
export function readV03PushConfig(value: unknown, taskId: string, where: string): PushConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`${where} must be an object`);
  }
  const fields = value as Record<string, unknown>;
  const url = readUrl(fields['url'], `${where}.url`);
  const token = readSecret(fields['token'], `${where}.token`);
  const auth = readObject(fields['authentication'], `${where}.authentication`);
  let authentication: PushAuthentication | undefined;
  const credentials = readSecret(auth['credentials'], `${where}.authentication.credentials`);
  if (credentials !== undefined) {
    const schemes = auth['schemes'];
    if (!Array.isArray(schemes) || schemes.length === 0) {
      throw invalid(`${where}.authentication.schemes must name the scheme of its credentials`);
    }
    authentication = { scheme: readScheme(schemes[0], `${where}.authentication.schemes[0]`), credentials };
  }
  return {
    id: readId(fields['id'], `${where}.id`) ?? taskId,
    taskId,
    url,
    ...(token !== undefined ? { token } : {}),
    ...(authentication ? { authentication } : {}),
    protocol: '0.3',
  };
}

/** 1.0: a flat `TaskPushNotificationConfig` (CreateTaskPushNotificationConfig's params, or inside SendMessage). */
export function readV1PushConfig(value: unknown, taskId: string | undefined, where: string): PushConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`${where} must be an object`);
  }
  const fields = value as Record<string, unknown>;
  const ownTaskId = readId(fields['taskId'], `${where}.taskId`) ?? taskId;
  if (ownTaskId === undefined) throw invalid(`${where}.taskId must be a non-empty string`);
  if (taskId !== undefined && ownTaskId !== taskId) {
    throw invalid(`${where}.taskId must be the task the message creates (or omitted)`);
  }
  const url = readUrl(fields['url'], `${where}.url`);
  const token = readSecret(fields['token'], `${where}.token`);
  const auth = readObject(fields['authentication'], `${where}.authentication`);
  const credentials = readSecret(auth['credentials'], `${where}.authentication.credentials`);
  const authentication =
    credentials !== undefined
      ? { scheme: readScheme(auth['scheme'], `${where}.authentication.scheme`), credentials }
      : undefined;
  return {
    id: readId(fields['id'], `${where}.id`) ?? ownTaskId,
    taskId: ownTaskId,
    url,
    ...(token !== undefined ? { token } : {}),
    ...(authentication ? { authentication } : {}),
    protocol: '1.0',
  };
}

/** 0.3 wire shape: `TaskPushNotificationConfig`. */
export function toV03PushConfig(config: PushConfig): Record<string, unknown> {
  return {
    taskId: config.taskId,
    pushNotificationConfig: {
      id: config.id,
      url: config.url,
      ...(config.token !== undefined ? { token: config.token } : {}),
      ...(config.authentication
        ? {
            authentication: {
              schemes: [config.authentication.scheme],
              credentials: config.authentication.credentials,
            },
          }
        : {}),
    },
  };
}

/** 1.0 wire shape: the flat `TaskPushNotificationConfig`. */
export function toV1PushConfig(config: PushConfig): Record<string, unknown> {
  return {
    id: config.id,
    taskId: config.taskId,
    url: config.url,
    ...(config.token !== undefined ? { token: config.token } : {}),
    ...(config.authentication ? { authentication: { ...config.authentication } } : {}),
  };
}
