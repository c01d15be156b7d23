// Client of a running edge's admin API, for CLI commands (`nodes list`, `config refresh`, ...). Wraps the
// generated grpc-js client in promises and async iterables and turns gRPC failures into AdminErrors with a clear
// message: an edge that is not running reads "cannot reach the edge admin API at <addr>: ...".
//
// Lifecycle: `createAdminClient` dials lazily (the first call connects); `close()` releases the channel.
import { credentials, Metadata, status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import {
  CancelRunRequest,
  EdgeAdminClient,
  GetUsageRequest,
  ListNodesRequest,
  ListProvidersRequest,
  NodeCommandCall,
  RefreshConfigRequest,
  SubmitRunRequest,
  TerminateSessionRequest,
  WatchEventsRequest,
  type AdminEdgeEvent,
  type NodeCommandRequest,
  type NodeCommandResponse,
  type NodeInfo,
  type ProviderStatus,
  type RefreshConfigResponse,
  type RunRequest,
  type SubmitRunEvent,
  type UsageGroup,
} from '@iop/wire';
import type { Clock } from '../clock.js';
import { pinnedServerIdentity } from './admin-tls.js';
import { AdminError } from './errors.js';
import { ERROR_CODE_TRAILER } from './grpc-status.js';

export interface AdminClientOptions {
  /** host:port of `refresh.listen`. */
  address: string;
  /** Admin token (`refresh.admin_token`); sent as `authorization: Bearer <token>`. */
  token?: string;
  /** Deadline of unary calls. Default 10 s. */
  timeoutMs?: number;
  /** TLS to an admin API beyond loopback: trust `ca` (the edge's certificate) and require its key. */
  tls?: { ca: Buffer; fingerprint: string };
}

export interface AdminClient {
  readonly address: string;
  listNodes(): Promise<NodeInfo[]>;
  listProviders(): Promise<ProviderStatus[]>;
  /** The run's events until it ends; aborting `signal` cancels the call and so the run. */
  submitRun(
    input: { node?: string; run: Partial<RunRequest> },
    options?: { signal?: AbortSignal },
  ): AsyncIterable<SubmitRunEvent>;
  cancelRun(runId: string): Promise<boolean>;
  /** Returns the node id the session lived on. */
  terminateSession(ref: {
    node?: string;
    adapter: string;
    target: string;
    sessionId: string;
  }): Promise<string>;
  nodeCommand(node: string | undefined, command: NodeCommandRequest): Promise<NodeCommandResponse>;
  watchEvents(options?: { includeRunEvents?: boolean; signal?: AbortSignal }): AsyncIterable<AdminEdgeEvent>;
  refreshConfig(input: {
    mode: string;
    configYaml: string;
    configPath: string;
  }): Promise<RefreshConfigResponse>;
  /** Usage totals grouped by key, model, node, provider or surface, since a time (Unix ms; 0 = all kept). */
  getUsage(input: { by: string; sinceUnixMs: number }): Promise<UsageGroup[]>;
  close(): void;
}

/** A client of the admin API at `options.address`; `clock` sets the calls' deadlines. */
export function createAdminClient(options: AdminClientOptions, clock: Clock): AdminClient {
  const { address } = options;
  const channelCredentials = options.tls
    ? credentials.createSsl(options.tls.ca, null, null, {
        checkServerIdentity: pinnedServerIdentity(options.tls.fingerprint),
      })
    : credentials.createInsecure();
  const client = new EdgeAdminClient(address, channelCredentials);
  const timeoutMs = options.timeoutMs ?? 10_000;

  function metadata(): Metadata {
    const result = new Metadata();
    if (options.token) result.set('authorization', `Bearer ${options.token}`);
    return result;
  }

  function unary<Response>(
    invoke: (
      metadata: Metadata,
      callOptions: { deadline: Date },
      callback: (error: ServiceError | null, response: Response) => void,
    ) => unknown,
  ): Promise<Response> {
    return new Promise((resolve, reject) => {
      invoke(metadata(), { deadline: new Date(clock.now() + timeoutMs) }, (error, response) => {
        if (error) reject(toAdminError(error, address));
        else resolve(response);
      });
    });
  }

  return {
    address,
    async listNodes() {
      const response = await unary<{ nodes: NodeInfo[] }>((md, callOptions, callback) =>
        client.listNodes(ListNodesRequest.fromPartial({}), md, callOptions, callback),
      );
      return response.nodes;
    },
    async listProviders() {
      const response = await unary<{ providers: ProviderStatus[] }>((md, callOptions, callback) =>
        client.listProviders(ListProvidersRequest.fromPartial({}), md, callOptions, callback),
      );
      return response.providers;
    },
    submitRun(input, callOptions) {
      const request = SubmitRunRequest.fromPartial({ node: input.node ?? '', run: input.run });
      return readStream(() => client.submitRun(request, metadata()), address, callOptions?.signal);
    },
    async cancelRun(runId) {
      const response = await unary<{ found: boolean }>((md, callOptions, callback) =>
        client.cancelRun(CancelRunRequest.fromPartial({ runId }), md, callOptions, callback),
      );
      return response.found;
    },
    async terminateSession(ref) {
      const request = TerminateSessionRequest.fromPartial({ ...ref, node: ref.node ?? '' });
      const response = await unary<{ nodeId: string }>((md, callOptions, callback) =>
        client.terminateSession(request, md, callOptions, callback),
      );
      return response.nodeId;
    },
    nodeCommand(node, command) {
      const request = NodeCommandCall.fromPartial({ node: node ?? '', command });
      return unary<NodeCommandResponse>((md, callOptions, callback) =>
        client.nodeCommand(request, md, callOptions, callback),
      );
    },
    watchEvents(watchOptions) {
      const request = WatchEventsRequest.fromPartial({
        includeRunEvents: watchOptions?.includeRunEvents ?? false,
      });
      return readStream(() => client.watchEvents(request, metadata()), address, watchOptions?.signal);
    },
    refreshConfig(input) {
      return unary<RefreshConfigResponse>((md, callOptions, callback) =>
        client.refreshConfig(RefreshConfigRequest.fromPartial(input), md, callOptions, callback),
      );
    },
    async getUsage(input) {
      const response = await unary<{ groups: UsageGroup[] }>((md, callOptions, callback) =>
        client.getUsage(GetUsageRequest.fromPartial(input), md, callOptions, callback),
      );
      return response.groups;
    },
    close() {
      client.close();
    },
  };
}

/** A server stream as an async iterable; breaking out of the loop or aborting cancels the call. */
async function* readStream<T>(
  open: () => ClientReadableStream<T>,
  address: string,
  signal: AbortSignal | undefined,
): AsyncGenerator<T> {
  if (signal?.aborted) return;
  const call = open();
  const cancel = (): void => call.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for await (const message of call as AsyncIterable<T>) yield message;
  } catch (error) {
    if (isServiceErrorLike(error) && error.code === status.CANCELLED && signal?.aborted) return;
    throw isServiceErrorLike(error) ? toAdminError(error, address) : error;
  } finally {
    signal?.removeEventListener('abort', cancel);
    call.cancel();
  }
}

function isServiceErrorLike(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === 'number';
}

/** Where the CLI's token comes from, for an operator whose call was refused. */
const UNAUTHENTICATED_HINT =
  " (the CLI sends refresh.admin_token from the edge's config — --config, IOP_EDGE_CONFIG or ./edge.yaml — or IOP_EDGE_ADMIN_TOKEN)";

/** gRPC failure → AdminError, keeping the edge's error code from the trailers. */
export function toAdminError(error: ServiceError, address: string): AdminError {
  const trailer = error.metadata?.get(ERROR_CODE_TRAILER)[0];
  const serviceCode = typeof trailer === 'string' ? trailer : undefined;
  const options = { cause: error, grpcCode: error.code, serviceCode };
  // grpc-js appends an empty "Resolution note: " to connection failures; drop it so the message ends cleanly.
  const details = (error.details || error.message).replace(/\.?\s*Resolution note:\s*$/, '');
  if (error.code === status.UNAUTHENTICATED) {
    return new AdminError(
      'unauthenticated',
      `the edge admin API at ${address} rejected the call: ${details}${UNAUTHENTICATED_HINT}`,
      options,
    );
  }
  if (error.code === status.UNAVAILABLE && serviceCode === undefined) {
    return new AdminError(
      'unreachable',
      `cannot reach the edge admin API at ${address}: ${details}`,
      options,
    );
  }
  if (error.code === status.DEADLINE_EXCEEDED && serviceCode === undefined) {
    return new AdminError(
      'unreachable',
      `cannot reach the edge admin API at ${address}: ${details}`,
      options,
    );
  }
  if (error.code === status.UNAVAILABLE) return new AdminError('unavailable', details, options);
  return new AdminError('call_failed', details, options);
}
