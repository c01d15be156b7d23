// Runs A2A tasks on IOP targets. One task = one run through the edge service's admission path (an explicit route
// to a2a.node/adapter/target, counted against the matching provider and the node's max_concurrency); a contextId
// is one IOP logical session pinned to the node that first served it, so follow-up messages continue the same CLI
// session. Runs of one context are serialized (a CLI session handles one turn at a time).
//
// Admission: a message for an idle context is admitted before the method answers, so a refusal (queue full, no
// node, ...) is a JSON-RPC error and no task is created; a message that has to wait behind an earlier turn of its
// context is admitted when its turn comes, and a refusal then fails the task. The service owns the run's deadline
// (a2a.timeout_sec), its release and the cancel grace: a task's cancel asks the service to cancel its run and
// waits for the run's end, which the run supervisor guarantees within its cancel grace (service/run-supervisor.ts).
//
// Tasks live in the service's run registry (service/run-registry.ts, kind `a2a.task`, keyed by the caller's
// principal): it holds each task's current state, its events for `message/stream` and `tasks/resubscribe`, and the
// cancel handle; it bounds how many are kept (the oldest finished first) and for how long, answers another key's
// task exactly like an unknown one, and in cluster mode finds a task another edge holds. This file runs the turns
// and translates them into the A2A task shape.
import type { ChatMessage, RunEventPart } from '@iop/wire';
import { create } from '@iop/wire';
import type { Clock } from '../clock.js';
import type { Principal } from '../governance/principal.js';
import type { Logger } from '../logging.js';
import type { EdgeService, RunHandle } from '../service/types.js';
import { isServiceError } from '../service/errors.js';
import {
  TERMINAL_STATES,
  type Artifact,
  type Message,
  type Part,
  type StreamEvent,
  type Task,
  type TaskState,
} from './a2a-types.js';
import { JSON_RPC_ERRORS, JsonRpcError } from './json-rpc.js';
import { RunRegistryError } from '../run-registry-error.js';
import { OwnerTaskIndex } from './owner-task-index.js';
import { pageTasks, type TaskListPage, type TaskListQuery } from './task-listing.js';
import {
  type RegisteredRun,
  type RunKey,
  type RunRegistry,
  type RunUpdate,
} from '../service/run-registry.js';

export interface A2ASettings {
  /** Node id or alias; empty = the single connected node. */
  node: string;
  adapter: string;
  target: string;
  /** Prefix of the IOP session ids made for A2A contexts. */
  sessionId: string;
  timeoutSec: number;
  maxContexts: number;
}

export interface TaskManagerDeps {
  service: EdgeService;
  logger: Logger;
  clock: Clock;
  newId: () => string;
}

export interface SendOptions {
  blocking: boolean;
  historyLength?: number;
  /** The caller's key; undefined = anonymous. */
  principal?: Principal;
  /** The caller's W3C `traceparent`, continued by the task's run. */
  traceparent?: string;
  /** Called with the new task's id once it is registered, before a blocking send waits (push configs). */
  onCreated?: (taskId: string) => void;
}

interface ContextState {
  /** The key whose context this is (contexts of different keys never mix); its limits apply to every turn. */
  principal?: Principal;
  nodeId?: string;
  sessionId: string;
  /** Conversation so far, for targets that do not keep their own (model servers). */
  history: ChatMessage[];
  /** Tail of the per-context run chain. */
  tail: Promise<void>;
  /** Messages of this context being admitted, waiting or running. */
  busy: number;
  lastUsedMs: number;
}

/** A task of this edge that has not finished: the run behind it and its entry in the run registry. */
interface TaskRecord {
  task: Task;
  registered: RegisteredRun;
  handle?: RunHandle | undefined;
  /** Resolves when the task is terminal. */
  finished: Promise<void>;
  markFinished: () => void;
}

const MAX_CONTEXT_HISTORY = 50;
const KIND = 'a2a.task';

export class TaskManager {
  private readonly contexts = new Map<string, ContextState>();
  private readonly registry: RunRegistry;
  private readonly owned = new OwnerTaskIndex();

  constructor(
    private readonly settings: A2ASettings,
    private readonly deps: TaskManagerDeps,
  ) {
    this.registry = deps.service.runRegistry;
    // Tasks an earlier process of this edge left in the durable record are listed too (ListTasks).
    for (const key of this.registry.localKeys(KIND)) this.owned.add(key.principal, key.id);
  }

  /** message/send: blocking waits for the terminal state; non-blocking returns the working task at once. */
  async send(params: Record<string, unknown>, options: SendOptions): Promise<Task> {
    // A blocking send answers with the finished task: the node may fetch the whole answer at once.
    const record = await this.start(params, options.principal, options.traceparent, options.blocking);
    options.onCreated?.(record.task.id);
    if (options.blocking) await record.finished;
    return snapshot(record.task, options.historyLength);
  }

  /** message/stream: the task first, then its status and artifact updates until the final one. */
  async stream(
    params: Record<string, unknown>,
    signal: AbortSignal,
    principal?: Principal,
    traceparent?: string,
    onCreated?: (taskId: string) => void,
  ): Promise<AsyncIterable<StreamEvent>> {
    const record = await this.start(params, principal, traceparent);
    onCreated?.(record.task.id);
    return taskEvents(() => this.registry.subscribeLocal(record.registered.key, signal));
  }

  /** The task (this edge's or, in cluster mode, another edge's), for the key that created it. */
  async get(id: string, historyLength?: number, principal?: Principal): Promise<Task> {
    const found = await this.registry.get(keyOf(id, principal));
    if (!found) throw notFound(id);
    return snapshot(found.state as Task, historyLength);
  }

  /** ListTasks: the caller's own tasks created on this edge that the registry still holds, newest first. */
  list(query: TaskListQuery, principal?: Principal): TaskListPage {
    const owner = principal?.id ?? '';
    const tasks: Task[] = [];
    const gone = new Set<string>();
    for (const id of this.owned.newestFirst(owner)) {
      const view = this.registry.getLocal(keyOf(id, principal));
      if (view) tasks.push(view.state as Task);
      else gone.add(id);
    }
    this.owned.forget(owner, gone);
    return pageTasks(tasks, query);
  }

  async cancel(id: string, principal?: Principal): Promise<Task> {
    const result = await this.registry.cancel(keyOf(id, principal), 'canceled by A2A client');
    if (!result) throw notFound(id);
    const task = result.view.state as Task;
    if (result.alreadyEnded) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.taskNotCancelable,
        `task ${id} is already ${task.status.state} and cannot be canceled`,
      );
    }
    return task;
  }

  /** The task's state, then its live events until the final one (wherever the task is held). */
  async resubscribe(
    id: string,
    signal: AbortSignal,
    principal?: Principal,
  ): Promise<AsyncIterable<StreamEvent>> {
    let updates: AsyncIterable<RunUpdate> | undefined;
    try {
      updates = await this.registry.subscribe(keyOf(id, principal), signal);
    } catch (error) {
      throw subscriptionError(error);
    }
    if (!updates) throw notFound(id);
    const found = updates;
    return taskEvents(() => found);
  }

  /** The registry's cancel handle of a task of this edge (called once, by the first cancel). */
  private async cancelRecord(record: TaskRecord): Promise<void> {
    if (isTerminal(record)) return;
    if (!record.handle) {
      // Not started yet (waiting behind another run of its context): it never reaches the node.
      this.transition(record, 'canceled', agentMessage(record.task, 'Task canceled before it started.'));
      return;
    }
    // The run ends at the latest the supervisor's cancel grace after this (it ends an unconfirmed cancel
    // itself); `execute` then records its outcome, which finishes the task. No wait of our own.
    await record.handle.cancel('canceled by A2A client');
    await record.finished;
  }

  private async start(
    params: Record<string, unknown>,
    principal: Principal | undefined,
    traceparent?: string,
    collect = false,
  ): Promise<TaskRecord> {
    const message = parseMessage(params['message']);
    if (message.taskId !== undefined) {
      const existing = await this.registry.get(keyOf(message.taskId, principal));
      if (!existing) throw notFound(message.taskId);
      throw new JsonRpcError(
        JSON_RPC_ERRORS.invalidParams,
        `task ${message.taskId} is ${(existing.state as Task).status.state}; send a new message with its contextId to continue the conversation`,
      );
    }
    const prompt = promptOf(message.parts);
    const contextId = message.contextId ?? this.deps.newId();
    const taskId = this.deps.newId();
    const context = this.context(contextId, principal);
    const idle = context.busy === 0;
    context.busy += 1;
    // Undefined while the message waits behind an earlier turn: it is admitted later, in `execute`.
    let handle: RunHandle | undefined;
    let userTurn: ChatMessage | undefined;
    try {
      if (idle) {
        // Admitted now: a refusal is the caller's JSON-RPC error (toJsonRpcError maps ServiceErrors).
        userTurn = create.chatMessage({ role: 'user', content: prompt });
        handle = await this.submit(context, userTurn, taskId, contextId, traceparent, collect);
      }
      const userMessage: Message = { ...message, contextId, taskId };
      const record = this.addRecord(keyOf(taskId, principal), contextId, userMessage);
      record.handle = handle;
      context.tail = context.tail
        .then(() => this.execute(record, context, prompt, handle, userTurn, traceparent, collect))
        .catch((error: unknown) => {
          this.deps.logger.error({ taskId, error: String(error) }, 'a2a task failed unexpectedly');
          this.transition(record, 'failed', agentMessage(record.task, `internal error: ${String(error)}`));
        })
        .finally(() => {
          context.busy -= 1;
        });
      return record;
    } catch (error) {
      context.busy -= 1;
      if (handle) void handle.cancel('a2a task could not be recorded');
      throw error;
    }
  }

  private addRecord(key: RunKey, contextId: string, userMessage: Message): TaskRecord {
    const task: Task = {
      kind: 'task',
      id: key.id,
      contextId,
      status: { state: 'submitted', timestamp: this.timestamp() },
      history: [userMessage],
      artifacts: [],
    };
    let markFinished: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => {
      markFinished = resolve;
    });
    let registered: RegisteredRun;
    try {
      registered = this.registry.add(key, structuredClone(task), () => this.cancelRecord(record));
    } catch (error) {
      // Full of running tasks: refused rather than forgetting work in flight.
      if (error instanceof RunRegistryError)
        throw new JsonRpcError(JSON_RPC_ERRORS.internalError, error.message);
      throw error;
    }
    const record: TaskRecord = { task, registered, finished, markFinished };
    this.owned.add(key.principal, key.id);
    return record;
  }

  /** One turn of a context through the service's admission path. */
  private async submit(
    context: ContextState,
    userTurn: ChatMessage,
    taskId: string,
    contextId: string,
    traceparent: string | undefined,
    collect: boolean,
  ): Promise<RunHandle> {
    const keepsOwnHistory = this.settings.adapter === 'cli';
    const messages = keepsOwnHistory ? [userTurn] : [...context.history, userTurn];
    const node = context.nodeId ?? (this.settings.node || undefined);
    const handle = await this.deps.service.submitRun(
      {
        kind: 'route',
        ...(node !== undefined ? { node } : {}),
        adapter: this.settings.adapter,
        target: this.settings.target,
      },
      {
        session: { kind: 'fixed', sessionId: context.sessionId },
        messages,
        timeoutMs: this.settings.timeoutSec * 1000,
        metadata: { surface: 'a2a', a2a_task_id: taskId, a2a_context_id: contextId },
        // The context is the conversation (a models[] destination would prefer the provider that served it).
        affinityKey: contextId,
        ...(collect ? { collect } : {}),
      },
      {
        surface: 'a2a',
        ...(context.principal ? { principal: context.principal } : {}),
        ...(traceparent ? { traceparent } : {}),
      },
    );
    context.nodeId = handle.nodeId;
    return handle;
  }

  private context(contextId: string, principal: Principal | undefined): ContextState {
    // Keyed by owner too: a key cannot continue (or read the history of) another key's context.
    const key = `${principal?.id ?? ''}\u0000${contextId}`;
    let context = this.contexts.get(key);
    if (!context) {
      context = {
        // The service makes this the principal's own session on the node (@iop/wire session-owner.ts), so a
        // key's contexts never meet another key's, even under the same context id or a key id that extends it.
        sessionId: `${this.settings.sessionId}-${contextId}`,
        history: [],
        tail: Promise.resolve(),
        busy: 0,
        lastUsedMs: this.deps.clock.now(),
      };
      this.contexts.set(key, context);
      this.evictContexts();
    }
    // The newest principal object: live key changes (limits) apply to the context's next turn.
    context.principal = principal;
    context.lastUsedMs = this.deps.clock.now();
    return context;
  }

  /** Forgets the least recently used contexts beyond maxContexts (their node sessions expire on their own). */
  private evictContexts(): void {
    if (this.contexts.size <= this.settings.maxContexts) return;
    const byAge = [...this.contexts.entries()]
      .filter(([, context]) => context.busy === 0)
      .sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs);
    for (const [contextId] of byAge.slice(0, this.contexts.size - this.settings.maxContexts)) {
      this.contexts.delete(contextId);
    }
  }

  private async execute(
    record: TaskRecord,
    context: ContextState,
    prompt: string,
    admitted: RunHandle | undefined,
    admittedTurn: ChatMessage | undefined,
    traceparent: string | undefined,
    collect: boolean,
  ): Promise<void> {
    if (isTerminal(record)) {
      // Canceled before its turn; a run admitted for it is cancelled too (capacity is released when it ends).
      if (admitted) await admitted.cancel('a2a task canceled');
      return;
    }
    const userTurn = admittedTurn ?? create.chatMessage({ role: 'user', content: prompt });
    let handle: RunHandle;
    if (admitted) {
      handle = admitted;
    } else {
      try {
        handle = await this.submit(
          context,
          userTurn,
          record.task.id,
          record.task.contextId,
          traceparent,
          collect,
        );
      } catch (error) {
        const reason = isServiceError(error)
          ? `${error.code}: ${error.message}`
          : `could not start the run: ${String(error)}`;
        this.transition(record, 'failed', agentMessage(record.task, reason));
        return;
      }
      record.handle = handle;
      if (isTerminal(record)) {
        await handle.cancel('a2a task canceled');
        return;
      }
    }
    this.transition(record, 'working');
    const text = await this.collect(record, handle);
    if (isTerminal(record)) return;
    const outcome = await handle.done;
    switch (outcome.status) {
      case 'completed':
        context.history.push(userTurn, create.chatMessage({ role: 'assistant', content: text }));
        context.history.splice(0, Math.max(0, context.history.length - MAX_CONTEXT_HISTORY));
        this.transition(record, 'completed', agentMessage(record.task, text));
        return;
      case 'cancelled':
        this.transition(record, 'canceled', agentMessage(record.task, `Task canceled: ${outcome.reason}`));
        return;
      case 'error':
        this.transition(record, 'failed', agentMessage(record.task, `${outcome.code}: ${outcome.message}`));
        return;
      default: {
        const unreachable: never = outcome;
        throw new Error(`unknown run outcome ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** Streams text into the task's artifact; returns the full text (the service ends the run at its deadline). */
  private async collect(record: TaskRecord, handle: RunHandle): Promise<string> {
    const artifactId = `${record.task.id}-output`;
    let text = '';
    let chunks = 0;
    {
      for await (const event of handle.events) {
        const part: RunEventPart = event.part;
        if (part.type !== 'text-delta' || part.text === '') continue;
        text += part.text;
        const artifact: Artifact = { artifactId, name: 'output', parts: [{ kind: 'text', text }] };
        record.task.artifacts = [artifact];
        record.registered.update(structuredClone(record.task));
        this.emit(record, {
          kind: 'artifact-update',
          taskId: record.task.id,
          contextId: record.task.contextId,
          artifact: { artifactId, name: 'output', parts: [{ kind: 'text', text: part.text }] },
          append: chunks > 0,
          lastChunk: false,
        });
        chunks += 1;
      }
    }
    if (chunks > 0) {
      this.emit(record, {
        kind: 'artifact-update',
        taskId: record.task.id,
        contextId: record.task.contextId,
        artifact: { artifactId, name: 'output', parts: [{ kind: 'text', text: '' }] },
        append: true,
        lastChunk: true,
      });
    }
    return text;
  }

  private transition(record: TaskRecord, state: TaskState, message?: Message): void {
    if (isTerminal(record)) return;
    record.task.status = { state, timestamp: this.timestamp(), ...(message ? { message } : {}) };
    if (message) record.task.history = [...(record.task.history ?? []), message];
    const final = TERMINAL_STATES.has(state);
    if (!final) record.registered.update(structuredClone(record.task));
    this.emit(record, {
      kind: 'status-update',
      taskId: record.task.id,
      contextId: record.task.contextId,
      status: record.task.status,
      final,
    });
    if (final) {
      // After the final event: subscribers see it, then their subscription ends.
      record.registered.end(structuredClone(record.task));
      record.handle = undefined;
      record.markFinished();
      this.deps.logger.info({ taskId: record.task.id, state }, 'a2a task finished');
    }
  }

  private emit(record: TaskRecord, event: StreamEvent): void {
    record.registered.emit(structuredClone(event));
  }

  private timestamp(): string {
    return new Date(this.deps.clock.now()).toISOString();
  }
}

function keyOf(id: string, principal: Principal | undefined): RunKey {
  return { principal: principal?.id ?? '', kind: KIND, id };
}

/** Another key's task is reported exactly like a missing one. */
function notFound(id: string): JsonRpcError {
  return new JsonRpcError(JSON_RPC_ERRORS.taskNotFound, `task ${id} not found`);
}

function isTerminal(record: TaskRecord): boolean {
  return TERMINAL_STATES.has(record.task.status.state);
}

/** A registry refusal of a subscription as the A2A client sees it. */
function subscriptionError(error: unknown): unknown {
  if (!(error instanceof RunRegistryError)) return error;
  return new JsonRpcError(
    error.code === 'too_many_subscribers' ? JSON_RPC_ERRORS.invalidRequest : JSON_RPC_ERRORS.internalError,
    error.message,
  );
}

/**
 * A task's registry updates as A2A stream events: the task, then its status and artifact updates until the final
 * one. A task that had already ended yields its state and its final status. `open` subscribes when the stream is
 * first read; a task with too many subscribers refuses another, and a client that falls too far behind gets an
 * error (it may resubscribe to get the task's current state); the run itself is not affected.
 */
async function* taskEvents(open: () => AsyncIterable<RunUpdate> | undefined): AsyncGenerator<StreamEvent> {
  let last: Task | undefined;
  let final = false;
  try {
    const updates = open();
    if (!updates) return;
    for await (const update of updates) {
      if ('state' in update) {
        last = update.state as Task;
        yield last;
        continue;
      }
      const event = update.event as StreamEvent;
      if (event.kind === 'status-update' && event.final) final = true;
      yield event;
    }
  } catch (error) {
    throw subscriptionError(error);
  }
  if (!final && last && TERMINAL_STATES.has(last.status.state)) {
    yield {
      kind: 'status-update',
      taskId: last.id,
      contextId: last.contextId,
      status: last.status,
      final: true,
    };
  }
}

function snapshot(task: Task, historyLength?: number): Task {
  const copy: Task = structuredClone(task);
  if (historyLength !== undefined && copy.history) {
    copy.history = historyLength <= 0 ? [] : copy.history.slice(-historyLength);
  }
  return copy;
}

/** The agent's text message appended to a task's history (its id counts the history). */
export function agentMessage(task: Task, text: string): Message {
  return {
    kind: 'message',
    messageId: `${task.id}-agent-${(task.history?.length ?? 0).toString()}`,
    role: 'agent',
    parts: [{ kind: 'text', text }],
    contextId: task.contextId,
    taskId: task.id,
  };
}

/** Validates an incoming A2A message (invalid params otherwise). */
export function parseMessage(value: unknown): Message {
  if (typeof value !== 'object' || value === null) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, 'params.message must be an object');
  }
  const message = value as Record<string, unknown>;
  if (message['role'] !== 'user' && message['role'] !== 'agent') {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, 'params.message.role must be "user" or "agent"');
  }
  if (typeof message['messageId'] !== 'string' || message['messageId'] === '') {
    throw new JsonRpcError(
      JSON_RPC_ERRORS.invalidParams,
      'params.message.messageId must be a non-empty string',
    );
  }
  if (!Array.isArray(message['parts']) || message['parts'].length === 0) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, 'params.message.parts must be a non-empty array');
  }
  for (const key of ['contextId', 'taskId'] as const) {
    if (message[key] !== undefined && (typeof message[key] !== 'string' || message[key] === '')) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.invalidParams,
        `params.message.${key} must be a non-empty string`,
      );
    }
  }
  const parts = (message['parts'] as unknown[]).map((part, index) => parsePart(part, index));
  return {
    kind: 'message',
    messageId: message['messageId'],
    role: message['role'],
    parts,
    ...(typeof message['contextId'] === 'string' ? { contextId: message['contextId'] } : {}),
    ...(typeof message['taskId'] === 'string' ? { taskId: message['taskId'] } : {}),
  };
}

function parsePart(value: unknown, index: number): Part {
  const where = `params.message.parts[${index.toString()}]`;
  if (typeof value !== 'object' || value === null) {
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where} must be an object`);
  }
  const part = value as Record<string, unknown>;
  switch (part['kind']) {
    case 'text':
      if (typeof part['text'] !== 'string') {
        throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where}.text must be a string`);
      }
      return { kind: 'text', text: part['text'] };
    case 'data':
      if (typeof part['data'] !== 'object' || part['data'] === null) {
        throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where}.data must be an object`);
      }
      return { kind: 'data', data: part['data'] as Record<string, unknown> };
    case 'file': {
      const file = part['file'];
      if (typeof file !== 'object' || file === null) {
        throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where}.file must be an object`);
      }
      const fields = file as Record<string, unknown>;
      if (typeof fields['uri'] !== 'string') {
        throw new JsonRpcError(
          JSON_RPC_ERRORS.contentTypeNotSupported,
          `${where}: inline file bytes are not supported; pass a file uri`,
        );
      }
      return {
        kind: 'file',
        file: {
          uri: fields['uri'],
          ...(typeof fields['mimeType'] === 'string' ? { mimeType: fields['mimeType'] } : {}),
          ...(typeof fields['name'] === 'string' ? { name: fields['name'] } : {}),
        },
      };
    }
    default:
      throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, `${where}.kind must be "text", "data" or "file"`);
  }
}

/** The prompt the target receives: text parts as written, data parts as JSON, file parts as references. */
function promptOf(parts: Part[]): string {
  const pieces = parts.map((part) => {
    switch (part.kind) {
      case 'text':
        return part.text;
      case 'data':
        return JSON.stringify(part.data);
      case 'file':
        return `[file ${part.file.name ?? ''} ${part.file.uri ?? ''}]`.replace(/\s+/g, ' ');
      default: {
        const unreachable: never = part;
        throw new Error(`unknown part ${JSON.stringify(unreachable)}`);
      }
    }
  });
  const prompt = pieces.join('\n').trim();
  if (prompt === '')
    throw new JsonRpcError(JSON_RPC_ERRORS.invalidParams, 'params.message has no text to send');
  return prompt;
}
