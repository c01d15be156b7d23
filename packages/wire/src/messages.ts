// The wire's message types, re-exported under domain names. Everything outside @iop/wire uses these names and
// never imports @iop/proto, so regenerating the protobuf code touches one package.
import { runtime } from '@iop/proto';

export type Envelope = runtime.Envelope;
export type EnvelopeMessage = NonNullable<runtime.Envelope['msg']>;
export type EnvelopeKind = EnvelopeMessage['$case'];
export type RegisterRequest = runtime.RegisterRequest;
export type RegisterResponse = runtime.RegisterResponse;
export type RegisterChallenge = runtime.RegisterChallenge;
export type RegisterProof = runtime.RegisterProof;
export type Heartbeat = runtime.Heartbeat;
export type Goodbye = runtime.Goodbye;
export type NodeConfigPayload = runtime.NodeConfigPayload;
export type AdapterInstance = runtime.AdapterInstance;
export type CliAdapterSettings = runtime.CliAdapterSettings;
export type CliProfile = runtime.CliProfile;
export type HttpAdapterSettings = runtime.HttpAdapterSettings;
export type ProviderConfig = runtime.ProviderConfig;
export type NodeConfigRefreshRequest = runtime.NodeConfigRefreshRequest;
export type NodeConfigRefreshResult = runtime.NodeConfigRefreshResult;
export type RunRequest = runtime.RunRequest;
export type ChatMessage = runtime.ChatMessage;
export type ToolDefinition = runtime.ToolDefinition;
export type ToolCall = runtime.ToolCall;
export type GenerationParams = runtime.GenerationParams;
export type CompletionInput = runtime.CompletionInput;
export type EmbeddingInput = runtime.EmbeddingInput;
export type Embedding = runtime.Embedding;
export type CancelRequest = runtime.CancelRequest;
export type RunEvent = runtime.RunEvent;
export type Usage = runtime.Usage;
export type NodeCommandRequest = runtime.NodeCommandRequest;
export type NodeCommandResponse = runtime.NodeCommandResponse;
export type ModelInfo = runtime.ModelInfo;
export type ProviderLifecycleResult = runtime.ProviderLifecycleResult;
export type ProviderLifecycleProgress = runtime.ProviderLifecycleProgress;
export type ProviderHealthEntry = runtime.ProviderHealthEntry;
export type ProviderStatusReport = runtime.ProviderStatusReport;
export type DiscoverySettings = runtime.DiscoverySettings;
export type NodeDiscovery = runtime.NodeDiscovery;
export type DiscoveredBackend = runtime.DiscoveredBackend;
export type DiscoveredCli = runtime.DiscoveredCli;
export type DiscoveredGpu = runtime.DiscoveredGpu;
export type DiscoveredHost = runtime.DiscoveredHost;
export type ModelAccess = runtime.ModelAccess;
export type ModelCallOpen = runtime.ModelCallOpen;
export type ModelCallData = runtime.ModelCallData;
export type ModelCallClose = runtime.ModelCallClose;

export const RegisterRejectCode = runtime.RegisterRejectCode;
export type RegisterRejectCode = runtime.RegisterRejectCode;
export const CancelAction = runtime.CancelAction;
export type CancelAction = runtime.CancelAction;
export const RunKind = runtime.RunKind;
export type RunKind = runtime.RunKind;
export const ProviderHealth = runtime.ProviderHealth;
export type ProviderHealth = runtime.ProviderHealth;
export const ResidentState = runtime.ResidentState;
export type ResidentState = runtime.ResidentState;

/** Version of the edge⇄node protocol spoken by this build. A mismatch is rejected at registration. */
export const PROTOCOL_VERSION = 1;

/**
 * Builders that fill every field with its proto3 default, so callers only name what they set. The given fields are
 * written into the fresh default message (one object per call, not a default and a copy of it).
 */
export const create = {
  runRequest: (fields: Partial<RunRequest>): RunRequest =>
    Object.assign(runtime.RunRequest.fromPartial({}), fields),
  chatMessage: (fields: Partial<ChatMessage>): ChatMessage =>
    Object.assign(runtime.ChatMessage.fromPartial({}), fields),
  generationParams: (fields: Partial<GenerationParams>): GenerationParams =>
    Object.assign(runtime.GenerationParams.fromPartial({}), fields),
  nodeCommandRequest: (fields: Partial<NodeCommandRequest>): NodeCommandRequest =>
    Object.assign(runtime.NodeCommandRequest.fromPartial({}), fields),
  nodeCommandResponse: (fields: Partial<NodeCommandResponse>): NodeCommandResponse =>
    Object.assign(runtime.NodeCommandResponse.fromPartial({}), fields),
  cliProfile: (fields: Partial<CliProfile>): CliProfile =>
    Object.assign(runtime.CliProfile.fromPartial({}), fields),
  usage: (fields: Partial<Usage>): Usage => Object.assign(runtime.Usage.fromPartial({}), fields),
  toolCall: (fields: Partial<ToolCall>): ToolCall => Object.assign(runtime.ToolCall.fromPartial({}), fields),
};
