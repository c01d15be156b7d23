import { afterEach, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import {
  AdminEdgeEvent,
  EdgeAdminClient,
  EdgeAdminService,
  ListNodesResponse,
  RefreshConfigResponse,
  type EdgeAdminServer,
} from './admin.js';

let server: grpc.Server | undefined;
let client: EdgeAdminClient | undefined;

afterEach(() => {
  client?.close();
  server?.forceShutdown();
  client = undefined;
  server = undefined;
});

function unimplemented(_call: unknown, callback: (error: grpc.ServiceError) => void): void {
  callback({
    code: grpc.status.UNIMPLEMENTED,
    details: 'unused',
    metadata: new grpc.Metadata(),
    name: 'Error',
    message: 'unused',
  });
}

describe('admin re-exports', () => {
  it('serve and call EdgeAdmin without importing @iop/proto', async () => {
    const implementation: EdgeAdminServer = {
      listNodes: (_call, callback) =>
        callback(
          null,
          ListNodesResponse.fromPartial({
            nodes: [{ nodeId: 'node-a', alias: 'builder', adapters: ['cli'] }],
          }),
        ),
      listProviders: unimplemented,
      submitRun: (call) => call.end(),
      cancelRun: unimplemented,
      terminateSession: unimplemented,
      nodeCommand: unimplemented,
      getUsage: unimplemented,
      watchEvents: (call) => {
        call.write(
          AdminEdgeEvent.fromPartial({
            event: { $case: 'node', node: { nodeId: 'node-a', kind: 'connected' } },
          }),
        );
        call.end();
      },
      refreshConfig: (_call, callback) =>
        callback(null, RefreshConfigResponse.fromPartial({ status: 'rejected', mode: 'dry-run' })),
    };
    const grpcServer = new grpc.Server();
    server = grpcServer;
    grpcServer.addService(EdgeAdminService, implementation);
    const port = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const adminClient = new EdgeAdminClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    client = adminClient;

    const nodes = await new Promise<ListNodesResponse>((resolve, reject) =>
      adminClient.listNodes({}, (error, response) => (error ? reject(error) : resolve(response))),
    );
    expect(nodes.nodes[0]).toMatchObject({ nodeId: 'node-a', alias: 'builder', adapters: ['cli'] });

    const refresh = await new Promise<RefreshConfigResponse>((resolve, reject) =>
      adminClient.refreshConfig({ mode: 'dry-run', configYaml: '', configPath: '' }, (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
    expect(refresh).toMatchObject({ status: 'rejected', changedNodes: [], reports: [] });

    const events: AdminEdgeEvent[] = [];
    for await (const event of adminClient.watchEvents({ includeRunEvents: false }))
      events.push(event as AdminEdgeEvent);
    expect(events).toEqual([
      AdminEdgeEvent.fromPartial({ event: { $case: 'node', node: { nodeId: 'node-a', kind: 'connected' } } }),
    ]);
  });
});
