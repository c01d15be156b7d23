// A scriptable in-memory Adapter for tests of the registry, executor and link. It behaves like a real adapter:
// `start` first, exactly one terminal part, honours the AbortSignal, answers commands, counts closes.
//
// Run behaviour is chosen by `request.metadata.fake`: `echo` (default) streams the last user message back and
// completes; `hold` streams `start` and waits for abort (then yields `cancelled`); `fail` yields an error part.
import {
  create,
  type AdapterInstance,
  type NodeCommandRequest,
  type NodeCommandResponse,
  type RunEventPart,
  type RunRequest,
} from '@iop/wire';
import {
  ADAPTER_INTERFACE_VERSION,
  type Adapter,
  type AdapterFactory,
  type AdapterType,
  type CommandOptions,
  type HealthProbeResult,
  type RunOptions,
} from '../../adapters/adapter.js';
import type { AbortSignalLike } from '../../adapters/cancellation.js';

export class FakeAdapter implements Adapter {
  readonly interfaceVersion = ADAPTER_INTERFACE_VERSION;
  readonly name: string;
  readonly type: AdapterType;
  readonly instance: AdapterInstance | undefined;
  readonly runs: RunRequest[] = [];
  readonly commands: NodeCommandRequest[] = [];
  readonly terminated: Array<{ target: string; sessionId: string }> = [];
  /** Runs currently inside `run` (incremented at start, decremented in finally). */
  active = 0;
  closeCount = 0;
  health: HealthProbeResult = { health: 'healthy', detail: 'ok', models: [] };
  /** Sessions `terminateSession` knows about (`target/session`). */
  readonly sessions = new Set<string>();
  /** Overrides the built-in command answers. */
  onCommand:
    ((request: NodeCommandRequest, options: CommandOptions) => Promise<NodeCommandResponse>) | undefined;

  constructor(name: string, type: AdapterType = 'cli', instance?: AdapterInstance) {
    this.name = name;
    this.type = type;
    this.instance = instance;
  }

  async *run(request: RunRequest, options: RunOptions): AsyncIterable<RunEventPart> {
    this.runs.push(request);
    this.active += 1;
    this.sessions.add(`${request.target}/${request.sessionId}`);
    try {
      yield { type: 'start', sessionId: request.sessionId, adapter: this.name, target: request.target };
      const behaviour = request.metadata['fake'] ?? 'echo';
      if (behaviour === 'hold') {
        await abortion(options.signal);
        yield { type: 'cancelled', reason: reasonOf(options.signal) };
        return;
      }
      if (behaviour === 'fail') {
        yield {
          type: 'error',
          code: 'backend_failed',
          message: 'fake failure',
          retryable: true,
          backendMs: 1,
        };
        return;
      }
      const text = request.messages.at(-1)?.content ?? '';
      yield { type: 'text-delta', text: `${text}_OK` };
      yield {
        type: 'usage',
        usage: create.usage({ promptTokens: 1, completionTokens: 2, totalTokens: 3 }),
      };
      yield { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 2 };
    } finally {
      this.active -= 1;
    }
  }

  async command(request: NodeCommandRequest, options: CommandOptions): Promise<NodeCommandResponse> {
    this.commands.push(request);
    if (this.onCommand) return this.onCommand(request, options);
    switch (request.command) {
      case 'capabilities':
        return create.nodeCommandResponse({ ok: true, result: { adapter: this.name, targets: 'fake-cli' } });
      case 'sessions':
        return create.nodeCommandResponse({
          ok: true,
          result: { 'session.count': String(this.sessions.size) },
        });
      default:
        return create.nodeCommandResponse({ ok: false, error: `unsupported command ${request.command}` });
    }
  }

  terminateSession(target: string, sessionId: string): Promise<boolean> {
    this.terminated.push({ target, sessionId });
    return Promise.resolve(this.sessions.delete(`${target}/${sessionId}`));
  }

  probeHealth(): Promise<HealthProbeResult> {
    return Promise.resolve(this.health);
  }

  close(): Promise<void> {
    this.closeCount += 1;
    return Promise.resolve();
  }
}

/** A factory that records every adapter it builds (newest last). */
export function fakeFactory(type: AdapterType = 'cli'): AdapterFactory & { built: FakeAdapter[] } {
  const built: FakeAdapter[] = [];
  const factory = (instance: AdapterInstance) => {
    const adapter = new FakeAdapter(instance.name, type, instance);
    built.push(adapter);
    return adapter;
  };
  return Object.assign(factory, { built });
}

export function adapterInstance(
  name: string,
  type: string,
  fields: Partial<AdapterInstance> = {},
): AdapterInstance {
  return { name, type, enabled: true, cli: undefined, http: undefined, ...fields };
}

function abortion(signal: AbortSignalLike): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

function reasonOf(signal: AbortSignalLike): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted';
}
