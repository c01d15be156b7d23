// Admin API keys with roles (`refresh.admin_keys`): a read key lists and watches, an operator key (or the
// `admin_token` shortcut) may also run, cancel, refresh; a missing or wrong key is UNAUTHENTICATED.
import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { AdminKeyConfig } from '@iop/config';
import { FakeEdgeService } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { silentLogger } from '../logging.js';
import { createAdminClient, type AdminClient } from './admin-client.js';
import { systemClock } from '../clock.js';
import { startAdminServer, type AdminSurface } from './admin-server.js';
import { AdminError } from './errors.js';

const sha = (value: string) => createHash('sha256').update(value).digest('hex');
const KEYS: AdminKeyConfig[] = [
  { id: 'viewer', key: '', key_sha256: sha('sk-read'), role: 'read' },
  { id: 'ops', key: 'sk-operator', key_sha256: sha('sk-operator'), role: 'operator' },
];

describe('admin API roles', () => {
  let surface: AdminSurface | undefined;
  const clients: AdminClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await surface?.close();
    surface = undefined;
  });

  async function serve(token = ''): Promise<string> {
    surface = await startAdminServer({
      listen: '127.0.0.1:0',
      token,
      keys: KEYS,
      service: FakeEdgeService.forConsole(),
      events: new FakeEventBus(),
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 100,
      usage: () => [],
    });
    return surface.address;
  }

  function client(address: string, token?: string): AdminClient {
    const made = createAdminClient({ address, timeoutMs: 3000, ...(token ? { token } : {}) }, systemClock);
    clients.push(made);
    return made;
  }

  async function failure(promise: Promise<unknown>): Promise<AdminError> {
    try {
      await promise;
    } catch (error) {
      if (error instanceof AdminError) return error;
      throw error;
    }
    throw new Error('expected the call to fail');
  }

  it('lets a read key list nodes, providers and usage but not cancel runs or refresh', async () => {
    const reader = client(await serve(), 'sk-read');
    expect(await reader.listNodes()).toEqual([]);
    expect(await reader.listProviders()).toEqual([]);
    expect(await reader.getUsage({ by: 'key', sinceUnixMs: 0 })).toEqual([]);
    const denied = await failure(reader.cancelRun('run-1'));
    expect(denied.grpcCode).toBe(status.PERMISSION_DENIED);
    expect(denied.message).toContain('needs an operator key');
    expect(
      (await failure(reader.refreshConfig({ mode: 'dry-run', configYaml: '', configPath: '' }))).grpcCode,
    ).toBe(status.PERMISSION_DENIED);
  });

  it('lets an operator key and the admin_token shortcut call everything', async () => {
    const address = await serve('sk-token');
    expect(await client(address, 'sk-operator').cancelRun('run-1')).toBe(false);
    expect(await client(address, 'sk-token').cancelRun('run-1')).toBe(false);
  });

  it('refuses a missing or unknown key as unauthenticated', async () => {
    const address = await serve();
    expect((await failure(client(address).listNodes())).code).toBe('unauthenticated');
    expect((await failure(client(address, 'sk-nobody').listNodes())).code).toBe('unauthenticated');
  });

  it('refuses to listen beyond loopback with keys but without TLS', async () => {
    await expect(
      startAdminServer({
        listen: '0.0.0.0:0',
        keys: KEYS,
        service: FakeEdgeService.forConsole(),
        events: new FakeEventBus(),
        logger: silentLogger,
        clock: systemClock,
      }),
    ).rejects.toMatchObject({ code: 'insecure_listen' });
  });
});
