// The operator gRPC API (EdgeAdmin) under domain names, so the admin server (edge) and the CLI client never import
// @iop/proto. Each message is exported as a type and as its codec object (fromPartial, encode, decode, ...).
import { admin } from '@iop/proto';

export const EdgeAdminService: admin.EdgeAdminService = admin.EdgeAdminService;
export type EdgeAdminService = admin.EdgeAdminService;
/** The handler object a gRPC server registers for EdgeAdminService. */
export type EdgeAdminServer = admin.EdgeAdminServer;
export const EdgeAdminClient = admin.EdgeAdminClient;
export type EdgeAdminClient = admin.EdgeAdminClient;

export const ListNodesRequest = admin.ListNodesRequest;
export type ListNodesRequest = admin.ListNodesRequest;
export const NodeInfo = admin.NodeInfo;
export type NodeInfo = admin.NodeInfo;
export const ListNodesResponse = admin.ListNodesResponse;
export type ListNodesResponse = admin.ListNodesResponse;
export const ListProvidersRequest = admin.ListProvidersRequest;
export type ListProvidersRequest = admin.ListProvidersRequest;
export const ProviderStatus = admin.ProviderStatus;
export type ProviderStatus = admin.ProviderStatus;
export const ListProvidersResponse = admin.ListProvidersResponse;
export type ListProvidersResponse = admin.ListProvidersResponse;
export const SubmitRunRequest = admin.SubmitRunRequest;
export type SubmitRunRequest = admin.SubmitRunRequest;
export const SubmitRunEvent = admin.SubmitRunEvent;
export type SubmitRunEvent = admin.SubmitRunEvent;
export const CancelRunRequest = admin.CancelRunRequest;
export type CancelRunRequest = admin.CancelRunRequest;
export const CancelRunResponse = admin.CancelRunResponse;
export type CancelRunResponse = admin.CancelRunResponse;
export const TerminateSessionRequest = admin.TerminateSessionRequest;
export type TerminateSessionRequest = admin.TerminateSessionRequest;
export const TerminateSessionResponse = admin.TerminateSessionResponse;
export type TerminateSessionResponse = admin.TerminateSessionResponse;
export const NodeCommandCall = admin.NodeCommandCall;
export type NodeCommandCall = admin.NodeCommandCall;
export const WatchEventsRequest = admin.WatchEventsRequest;
export type WatchEventsRequest = admin.WatchEventsRequest;
/** admin.proto's EdgeEvent, renamed: the edge's in-process EdgeEvent (events/types.ts) is a different type. */
export const AdminEdgeEvent = admin.EdgeEvent;
export type AdminEdgeEvent = admin.EdgeEvent;
export const NodeLifecycleEvent = admin.NodeLifecycleEvent;
export type NodeLifecycleEvent = admin.NodeLifecycleEvent;
export const RefreshConfigRequest = admin.RefreshConfigRequest;
export type RefreshConfigRequest = admin.RefreshConfigRequest;
export const RefreshReport = admin.RefreshReport;
export type RefreshReport = admin.RefreshReport;
export const RefreshNodeResult = admin.RefreshNodeResult;
export type RefreshNodeResult = admin.RefreshNodeResult;
export const RefreshConfigResponse = admin.RefreshConfigResponse;
export type RefreshConfigResponse = admin.RefreshConfigResponse;
export const GetUsageRequest = admin.GetUsageRequest;
export type GetUsageRequest = admin.GetUsageRequest;
export const UsageGroup = admin.UsageGroup;
export type UsageGroup = admin.UsageGroup;
export const GetUsageResponse = admin.GetUsageResponse;
export type GetUsageResponse = admin.GetUsageResponse;
