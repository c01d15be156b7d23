// One fully populated envelope per message kind (test support). Typed as a Record over EnvelopeKind so adding a
// kind to the proto fails compilation here until a sample exists.
import { envelope } from '../envelope.js';
import {
  CancelAction,
  ProviderHealth,
  RegisterRejectCode,
  type Envelope,
  type EnvelopeKind,
  type RunEvent,
} from '../messages.js';
import { toWireRunEvent } from '../run-event-part.js';

const nodeConfig = {
  nodeId: 'node-a',
  alias: 'builder',
  maxConcurrency: 4,
  adapters: [
    {
      name: 'cli',
      type: 'cli',
      enabled: true,
      cli: {
        profiles: {
          claude: {
            command: 'claude',
            args: ['-p', '--output-format', 'stream-json'],
            env: { HOME: '/home/agent' },
            mode: 'one-shot',
            persistent: false,
            terminal: false,
            resumeArgs: ['--resume', '{session}'],
            outputFormat: 'claude-stream-json',
            idleTimeoutMs: 30000,
            requestTimeoutMs: 600000,
            resultGraceMs: 500,
          },
        },
        maxSessions: 8,
        sessionIdleTtlMs: 900000,
        workspaceRoots: ['/srv/work'],
      },
    },
    {
      name: 'ollama',
      type: 'ollama',
      enabled: true,
      http: {
        provider: 'ollama',
        baseUrl: 'http://127.0.0.1:11434',
        headers: { 'x-team': 'alpha' },
        requestTimeoutMs: 120000,
        contextSize: 8192,
      },
    },
  ],
  providers: [
    {
      id: 'ollama-local',
      type: 'ollama',
      category: 'local_inference',
      adapter: 'ollama',
      models: ['llama3.2'],
      capacity: 2,
      enabled: true,
      lifecycleCapabilities: ['list_models', 'pull_model'],
    },
  ],
  revision: 'sha256:abc',
  healthProbeIntervalMs: 15000,
};

export const sampleEnvelopes: Record<EnvelopeKind, Envelope> = {
  registerRequest: envelope.registerRequest({
    nodeId: 'node-a',
    token: 'secret-token',
    agentVersion: '0.1.0',
    protocolVersion: 1,
    os: 'linux',
    arch: 'x64',
    hostname: 'build-01',
    supportedAdapters: ['cli', 'ollama', 'openai_compat'],
  }),
  registerResponse: envelope.registerResponse({
    accepted: false,
    rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_BAD_TOKEN,
    reason: 'token does not match',
    edgeId: 'edge-1',
    protocolVersion: 1,
    heartbeatIntervalMs: 5000,
    heartbeatTimeoutMs: 15000,
    config: nodeConfig,
  }),
  heartbeatPing: envelope.heartbeatPing(7, 1_700_000_000_123),
  heartbeatPong: envelope.heartbeatPong(7, 1_700_000_000_456),
  runRequest: envelope.runRequest({
    runId: 'run-1',
    adapter: 'cli',
    target: 'claude',
    sessionId: 's-1',
    background: true,
    workspace: '/work/repo',
    messages: [
      {
        role: 'system',
        content: 'be brief',
        toolCalls: [],
        toolCallId: '',
        name: '',
        images: [],
        reasoning: '',
      },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call-1', name: 'read', argumentsJson: '{"path":"a.txt"}', index: 0 }],
        toolCallId: '',
        name: '',
        images: [],
        reasoning: 'need the file',
      },
      {
        role: 'tool',
        content: 'hello ✓ 日本',
        toolCalls: [],
        toolCallId: 'call-1',
        name: 'read',
        images: ['aGk='],
        reasoning: '',
      },
    ],
    tools: [{ name: 'read', description: 'read a file', parametersJson: '{"type":"object"}' }],
    toolChoiceJson: '"auto"',
    params: {
      maxTokens: 256,
      temperature: 0.25,
      topP: 0.9,
      stop: ['\n\n'],
      reasoningEffort: 'high',
      thinkingBudget: 1024,
      includeReasoning: true,
      think: true,
      seed: -7,
      presencePenalty: 0.5,
      frequencyPenalty: -0.25,
      responseFormatJson: '{"type":"json_object"}',
    },
    extraBodyJson: '{"top_k":20}',
    timeoutMs: 60000,
    providerId: 'ollama-local',
    metadata: { origin: 'openai' },
  }),
  cancelRequest: envelope.cancelRequest({
    action: CancelAction.CANCEL_ACTION_TERMINATE_SESSION,
    runId: 'run-1',
    adapter: 'cli',
    target: 'claude',
    sessionId: 's-1',
    reason: 'operator',
  }),
  runEvent: envelope.runEvent(
    toWireRunEvent(
      'run-1',
      3,
      { type: 'complete', detail: 'idle-timeout', finishReason: 'stop', backendMs: 12.5 },
      1_700_000_000_999,
    ),
  ),
  nodeCommandRequest: envelope.nodeCommandRequest('req-1', {
    command: 'pull_model',
    adapter: 'ollama',
    target: 'llama3.2',
    sessionId: '',
    args: { model: 'llama3.2', insecure: 'false' },
    providerId: 'ollama-local',
  }),
  nodeCommandResponse: envelope.nodeCommandResponse('req-1', {
    ok: true,
    error: '',
    result: { status: 'success' },
    lifecycle: {
      providerId: 'ollama-local',
      action: 'list_models',
      models: [
        {
          name: 'llama3.2',
          sizeBytes: 2_019_393_189,
          digest: 'sha256:a80c',
          loaded: true,
          expiresAt: '2026-01-01T00:00:00Z',
        },
      ],
      status: 'ok',
    },
  }),
  nodeConfigRefreshRequest: envelope.nodeConfigRefreshRequest('req-2', nodeConfig),
  nodeConfigRefreshResult: envelope.nodeConfigRefreshResult('req-2', {
    revision: 'sha256:abc',
    ok: false,
    error: 'adapter x missing',
  }),
  providerStatusReport: envelope.providerStatusReport([
    {
      providerId: 'ollama-local',
      health: ProviderHealth.PROVIDER_HEALTH_UNREACHABLE,
      detail: 'connect ECONNREFUSED',
      checkedAtUnixMs: 1_700_000_000_000,
      models: ['llama3.2'],
    },
  ]),
  providerLifecycleProgress: envelope.providerLifecycleProgress('req-1', {
    providerId: 'ollama-local',
    model: 'llama3.2',
    status: 'pulling sha256:a80c',
    digest: 'sha256:a80c',
    total: 2_019_393_189,
    completed: 1_000_000,
  }),
  goodbye: envelope.goodbye('replaced', 'a newer connection authenticated'),
  nodeDiscovery: envelope.nodeDiscovery({
    backends: [
      {
        kind: 'ollama',
        baseUrl: 'http://127.0.0.1:11434',
        models: ['llama3.2', 'qwen3:8b'],
        version: '0.12.6',
        loadedModels: ['qwen3:8b'],
      },
    ],
    clis: [{ name: 'codex', path: '/usr/local/bin/codex', version: 'codex-cli 0.46.0' }],
    host: {
      os: 'linux',
      arch: 'x64',
      cpuCores: 16,
      memoryBytes: 68_719_476_736,
      gpus: [{ name: 'NVIDIA GeForce RTX 4090', memoryBytes: 25_757_220_864, vendor: 'nvidia' }],
    },
    discoveredAtUnixMs: 1_700_000_000_789,
  }),
};

/** Every run event variant, for round-trip tests of the nested oneof. */
export const sampleRunEvents: RunEvent[] = [
  toWireRunEvent('run-1', 0, { type: 'start', sessionId: 's-1', adapter: 'cli', target: 'claude' }, 1),
  toWireRunEvent('run-1', 1, { type: 'text-delta', text: 'Hel' }, 2),
  toWireRunEvent('run-1', 2, { type: 'reasoning-delta', text: 'thinking…' }, 3),
  // float32-exact values: they survive the packed-float encoding unchanged.
  toWireRunEvent(
    'run-1',
    2,
    {
      type: 'embeddings',
      items: [
        { index: 0, values: [0.5, -0.25, 0.125] },
        { index: 1, values: [1, 0, -1] },
      ],
    },
    3,
  ),
  toWireRunEvent(
    'run-1',
    3,
    { type: 'tool-call', call: { id: 'c', name: 'n', argumentsJson: '{}', index: 1 } },
    4,
  ),
  toWireRunEvent(
    'run-1',
    4,
    {
      type: 'usage',
      usage: {
        promptTokens: 5,
        completionTokens: 2,
        totalTokens: 7,
        reasoningTokens: 1,
        cachedTokens: 3,
        costUsd: 0.0012,
      },
    },
    5,
  ),
  toWireRunEvent(
    'run-1',
    5,
    { type: 'progress', kind: 'log', message: 'tool started', fields: { tool: 'bash' } },
    6,
  ),
  toWireRunEvent(
    'run-1',
    6,
    { type: 'complete', detail: 'idle-timeout', finishReason: 'stop', backendMs: 1.5 },
    7,
  ),
  toWireRunEvent(
    'run-1',
    7,
    { type: 'error', code: 'backend_unavailable', message: 'down', retryable: true, backendMs: 2 },
    8,
  ),
  toWireRunEvent('run-1', 8, { type: 'cancelled', reason: 'client went away' }, 9),
];
