// Which A2A protocol version a JSON-RPC call speaks: 0.3 (slash-named methods: `message/send`) or 1.0
// (PascalCase methods: `SendMessage`). The method name decides; an `A2A-Version` header, when present, must name a
// version the edge speaks (otherwise -32009) and agree with the method (a 1.0 call of `message/send` is an
// unknown method, as it would be on a 1.0-only agent). No header means what the method name says, so 0.3 clients
// that never send one are served as before.
import { JSON_RPC_ERRORS, JsonRpcError } from './json-rpc.js';

export type A2AProtocol = '0.3' | '1.0';

/** The versions this edge speaks, as the agent card and error messages name them. */
export const SUPPORTED_PROTOCOLS: readonly A2AProtocol[] = ['1.0', '0.3'];

/** The 1.0 JSON-RPC methods. */
export const V1_METHODS: ReadonlySet<string> = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
]);

export function selectProtocol(method: string, versionHeader: string | undefined): A2AProtocol {
  const byMethod: A2AProtocol = V1_METHODS.has(method) ? '1.0' : '0.3';
  const header = versionHeader?.trim() ?? '';
  if (header === '') return byMethod;
  const asked = protocolOf(header);
  if (asked === undefined) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.versionNotSupported,
      `A2A-Version ${header} is not supported; this agent speaks ${SUPPORTED_PROTOCOLS.join(' and ')}`,
    );
  }
  if (asked !== byMethod) {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.methodNotFound,
      `method ${method} is not an A2A ${asked} method (A2A-Version: ${header})`,
    );
  }
  return asked;
}

/** "1.0" / "1" → 1.0; "0.3" / "0.3.0" → 0.3; anything else → undefined. */
function protocolOf(header: string): A2AProtocol | undefined {
  const match = /^(\d+)(?:\.(\d+))?(?:\.\d+)?$/.exec(header);
  if (!match) return undefined;
  const major = Number(match[1]);
  const minor = Number(match[2] ?? '0');
  if (major === 1 && minor === 0) return '1.0';
  if (major === 0 && minor === 3) return '0.3';
  return undefined;
}
