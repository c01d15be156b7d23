// Builders for every Envelope kind, so callers never spell out the oneof by hand, plus envelopeKind for logs
// and dispatch tables. Builders taking Partial<...> fill every unset field with its proto3 default.
import { systemClock } from '@iop/clock';
import { runtime } from '@iop/proto';
import type {
  CancelRequest,
  Envelope,
  EnvelopeKind,
  NodeCommandRequest,
  NodeCommandResponse,
  NodeConfigPayload,
  NodeConfigRefreshResult,
  NodeDiscovery,
  ProviderHealthEntry,
  ProviderLifecycleProgress,
  RegisterRequest,
  RegisterResponse,
  RunEvent,
  RunRequest,
} from './messages.js';

export const envelope = {
  /** node → edge, first frame on every connection. */
  registerRequest: (fields: Partial<RegisterRequest>): Envelope => ({
    requestId: '',
    msg: { $case: 'registerRequest', registerRequest: runtime.RegisterRequest.fromPartial(fields) },
  }),
  /** edge → node, the answer to registerRequest (accepted with config, or rejected with a reason). */
  registerResponse: (fields: Partial<RegisterResponse>): Envelope => ({
    requestId: '',
    msg: { $case: 'registerResponse', registerResponse: runtime.RegisterResponse.fromPartial(fields) },
  }),
  /** edge → node, after a registerRequest with an identity key: sign this nonce (registerProof). */
  registerChallenge: (nonce: Buffer): Envelope => ({
    requestId: '',
    msg: { $case: 'registerChallenge', registerChallenge: { nonce } },
  }),
  /** node → edge, the answer to registerChallenge. */
  registerProof: (signature: Buffer): Envelope => ({
    requestId: '',
    msg: { $case: 'registerProof', registerProof: { signature } },
  }),
  /** Either side; the receiver answers with heartbeatPong carrying the same seq. */
  heartbeatPing: (seq: number, sentAtUnixMs: number = systemClock.now()): Envelope => ({
    requestId: '',
    msg: { $case: 'heartbeatPing', heartbeatPing: { seq, sentAtUnixMs } },
  }),
  heartbeatPong: (seq: number, sentAtUnixMs: number = systemClock.now()): Envelope => ({
    requestId: '',
    msg: { $case: 'heartbeatPong', heartbeatPong: { seq, sentAtUnixMs } },
  }),
  /** edge → node. */
  runRequest: (request: Partial<RunRequest>): Envelope => ({
    requestId: '',
    msg: { $case: 'runRequest', runRequest: runtime.RunRequest.fromPartial(request) },
  }),
  /** edge → node: cancel a run or terminate a session. */
  cancelRequest: (fields: Partial<CancelRequest>): Envelope => ({
    requestId: '',
    msg: { $case: 'cancelRequest', cancelRequest: runtime.CancelRequest.fromPartial(fields) },
  }),
  /** node → edge. Taken as is (hot path: one per streamed delta). */
  runEvent: (event: RunEvent): Envelope => ({ requestId: '', msg: { $case: 'runEvent', runEvent: event } }),
  /** edge → node; the node answers with nodeCommandResponse under the same requestId. */
  nodeCommandRequest: (requestId: string, command: Partial<NodeCommandRequest>): Envelope => ({
    requestId,
    msg: { $case: 'nodeCommandRequest', nodeCommandRequest: runtime.NodeCommandRequest.fromPartial(command) },
  }),
  nodeCommandResponse: (requestId: string, response: Partial<NodeCommandResponse>): Envelope => ({
    requestId,
    msg: {
      $case: 'nodeCommandResponse',
      nodeCommandResponse: runtime.NodeCommandResponse.fromPartial(response),
    },
  }),
  /** edge → node; the node answers with nodeConfigRefreshResult under the same requestId. */
  nodeConfigRefreshRequest: (requestId: string, config: Partial<NodeConfigPayload>): Envelope => ({
    requestId,
    msg: {
      $case: 'nodeConfigRefreshRequest',
      nodeConfigRefreshRequest: { config: runtime.NodeConfigPayload.fromPartial(config) },
    },
  }),
  nodeConfigRefreshResult: (requestId: string, result: Partial<NodeConfigRefreshResult>): Envelope => ({
    requestId,
    msg: {
      $case: 'nodeConfigRefreshResult',
      nodeConfigRefreshResult: runtime.NodeConfigRefreshResult.fromPartial(result),
    },
  }),
  /** node → edge, unsolicited: provider health after each probe round. */
  providerStatusReport: (providers: Partial<ProviderHealthEntry>[]): Envelope => ({
    requestId: '',
    msg: {
      $case: 'providerStatusReport',
      providerStatusReport: runtime.ProviderStatusReport.fromPartial({ providers }),
    },
  }),
  /** node → edge while a lifecycle command runs; requestId names that command. */
  providerLifecycleProgress: (requestId: string, progress: Partial<ProviderLifecycleProgress>): Envelope => ({
    requestId,
    msg: {
      $case: 'providerLifecycleProgress',
      providerLifecycleProgress: runtime.ProviderLifecycleProgress.fromPartial(progress),
    },
  }),
  /** node → edge, unsolicited: what the node found it can run (after registration and when it changes). */
  nodeDiscovery: (discovery: Partial<NodeDiscovery>): Envelope => ({
    requestId: '',
    msg: { $case: 'nodeDiscovery', nodeDiscovery: runtime.NodeDiscovery.fromPartial(discovery) },
  }),
  /** node → edge: an agent connected to its run's model endpoint; the call's bytes follow as modelCallData. */
  modelCallOpen: (callId: string, parentRunId: string): Envelope => ({
    requestId: '',
    msg: { $case: 'modelCallOpen', modelCallOpen: { callId, parentRunId } },
  }),
  /** Either side: bytes of an open model call. */
  modelCallData: (callId: string, data: Uint8Array): Envelope => ({
    requestId: '',
    msg: {
      $case: 'modelCallData',
      modelCallData: { callId, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) },
    },
  }),
  /** Either side: no more bytes of this model call ('' = a plain end; otherwise why). */
  modelCallClose: (callId: string, reason = ''): Envelope => ({
    requestId: '',
    msg: { $case: 'modelCallClose', modelCallClose: { callId, reason } },
  }),
  /** Either side, last frame before a deliberate close. */
  goodbye: (reason: string, detail = ''): Envelope => ({
    requestId: '',
    msg: { $case: 'goodbye', goodbye: { reason, detail } },
  }),
} satisfies Record<EnvelopeKind, (...args: never[]) => Envelope>;

/** The message kind of an envelope, or undefined for an envelope that carries none. */
export function envelopeKind(value: Envelope): EnvelopeKind | undefined {
  return value.msg?.$case;
}
