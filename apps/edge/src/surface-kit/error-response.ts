// The one way an HTTP surface answers a failure, whatever its wire shape: log it (a warning for the edge's own
// failures, debug for refusals and clients that left), end a response whose head already left, or write the
// surface's mapped error as JSON with its headers.
import type { ServerResponse } from 'node:http';
import type { Logger } from '../logging.js';
import { writeJson } from './json-response.js';

/** A failure in a surface's wire shape, as its mapper decided it. */
export interface MappedFailure {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  /** A stable code for logs. */
  code: string | null;
}

export interface ErrorAnswer {
  /** The surface's name in log messages (`openai`, `anthropic`). */
  surface: string;
  logger: Logger;
  response: ServerResponse;
  /** The request path without its query, for the log. */
  path: string;
  /** Extra headers for the answer (a flat name/value list), e.g. the edge's timing figure. */
  headers?: (string | number)[];
}

export function sendErrorResponse(error: unknown, mapped: MappedFailure, answer: ErrorAnswer): void {
  const { logger, response, path, surface } = answer;
  if (response.destroyed) {
    logger.debug({ code: mapped.code, path }, `${surface} client went away`);
    return;
  }
  if (mapped.status >= 500) {
    logger.warn({ err: error, status: mapped.status, code: mapped.code, path }, `${surface} request failed`);
  } else {
    logger.debug({ status: mapped.status, code: mapped.code, path }, `${surface} request rejected`);
  }
  if (response.headersSent) {
    if (!response.writableEnded) response.end();
    return;
  }
  for (const [name, value] of Object.entries(mapped.headers)) response.setHeader(name, value);
  writeJson(response, mapped.status, mapped.body, answer.headers);
}
