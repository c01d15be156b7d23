// Decides whether a register request is accepted: protocol version, node id form, known node, token, and the
// agent kind `nodes[].agent_kind` expects for the node (a node that does not say is an `iop-node`).
// Pure apart from the store lookup, so every rejection reason is unit-testable; the wording of `reason` is what
// the node prints when it exits, so it says what to do.
import { DEFAULTS } from '@iop/config';
import { PROTOCOL_VERSION, RegisterRejectCode, type RegisterRequest } from '@iop/wire';
import { isValidNodeId, type NodeStore } from './node-store.js';

export type RegistrationDecision =
  { accepted: true } | { accepted: false; code: RegisterRejectCode; reason: string; logReason: string };

export async function evaluateRegistration(
  request: RegisterRequest,
  context: {
    store: NodeStore;
    shuttingDown: boolean;
    /** `nodes[].agent_kind` of a configured node; undefined = not configured (any kind). */
    expectedAgentKind?: (nodeId: string) => string | undefined;
  },
): Promise<RegistrationDecision> {
  if (context.shuttingDown) {
    return reject(
      RegisterRejectCode.REGISTER_REJECT_CODE_SHUTTING_DOWN,
      'the edge is shutting down',
      'shutting-down',
    );
  }
  if (request.protocolVersion !== PROTOCOL_VERSION) {
    return reject(
      RegisterRejectCode.REGISTER_REJECT_CODE_PROTOCOL_MISMATCH,
      `protocol version ${request.protocolVersion} is not supported: this edge speaks version ${PROTOCOL_VERSION}; install a matching iop-node`,
      'protocol-mismatch',
    );
  }
  if (!isValidNodeId(request.nodeId)) {
    return reject(
      RegisterRejectCode.REGISTER_REJECT_CODE_MALFORMED,
      `invalid node id '${request.nodeId}': use 1-64 letters, digits, '.', '_' or '-'`,
      'malformed-register',
    );
  }
  let verdict: Awaited<ReturnType<NodeStore['verify']>>;
  try {
    verdict = await context.store.verify(request.nodeId, request.token);
  } catch (error) {
    return reject(
      RegisterRejectCode.REGISTER_REJECT_CODE_UNSPECIFIED,
      'the edge cannot read its node store; ask the operator to check the edge log',
      `store-error: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (verdict.ok) {
    const expected = context.expectedAgentKind?.(request.nodeId);
    const reported = request.agentKind || DEFAULTS.agent_kind;
    if (expected !== undefined && expected !== reported) {
      return reject(
        RegisterRejectCode.REGISTER_REJECT_CODE_AGENT_KIND_MISMATCH,
        `node '${request.nodeId}' is an agent of kind '${reported}', but the edge config expects '${expected}' (nodes[].agent_kind)`,
        'agent-kind-mismatch',
      );
    }
    return { accepted: true };
  }
  if (verdict.reason === 'unknown_node') {
    return reject(
      RegisterRejectCode.REGISTER_REJECT_CODE_UNKNOWN_NODE,
      `unknown node '${request.nodeId}': register it on the edge with 'iop-edge node register ${request.nodeId}'`,
      'unknown-node',
    );
  }
  return reject(
    RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN,
    `invalid token for node '${request.nodeId}'`,
    'bad-token',
  );
}

function reject(code: RegisterRejectCode, reason: string, logReason: string): RegistrationDecision {
  return { accepted: false, code, reason, logReason };
}
