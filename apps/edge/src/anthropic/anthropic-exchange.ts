// One request to the Anthropic routes: the kit's request context plus its path and query (the routes read both).
import type { RequestContext } from '../surface-kit/request-context.js';
import { writeJson } from '../surface-kit/json-response.js';
import type { StartedRun } from '../surface-kit/run-starter.js';
import type { ServerResponse } from 'node:http';

export interface AnthropicExchange extends RequestContext {
  /** The request's path without its query (`/v1/messages?beta=true` → `/v1/messages`). */
  readonly path: string;
  readonly query: string;
}

/** Writes a whole JSON answer with the headers set so far. */
export function sendJson(exchange: AnthropicExchange, status: number, body: unknown): void {
  writeJson(exchange.response, status, body);
}

/** The run's headers as they are now (a retry before the first output changes the provider and the attempts). */
export function setRunHeaders(response: ServerResponse, run: StartedRun): void {
  response.setHeader('x-iop-run-id', run.handle.runId);
  response.setHeader('x-iop-queue-ms', run.handle.queueMs.toFixed(2));
  response.setHeader('x-iop-attempts', String(run.handle.attempts ?? 1));
  if (run.handle.providerId) response.setHeader('x-iop-provider', run.handle.providerId);
}
