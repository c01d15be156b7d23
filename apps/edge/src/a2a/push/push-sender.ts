// One attempt to deliver one notification: a POST of the stored body to the checked target, with the client's
// token (`X-A2A-Notification-Token`) and credentials (`Authorization: <scheme> <credentials>`). Bounded: one
// deadline for connection, request and response; at most MAX_RESPONSE_BYTES of the answer are read; a redirect is
// not followed. The answer decides what the outbox does next: delivered (2xx), retry later (network error,
// timeout, 408/425/429, 5xx), or give up (a redirect or another 4xx: the webhook refuses this notification).
import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Clock } from '../../clock.js';
import type { PushAuthentication } from './push-config.js';
import type { CheckedPushTarget } from './push-target.js';

export const NOTIFICATION_TOKEN_HEADER = 'X-A2A-Notification-Token';
/** The part of a webhook's answer read (and discarded). */
const MAX_RESPONSE_BYTES = 64 * 1024;
const RETRYABLE_STATUSES = new Set([408, 425, 429]);

export interface PushRequest {
  target: CheckedPushTarget;
  contentType: string;
  body: string;
  token?: string | undefined;
  authentication?: PushAuthentication | undefined;
}

export type PushAttemptResult =
  | { kind: 'delivered'; status: number }
  | { kind: 'retry'; reason: string }
  | { kind: 'rejected'; reason: string };

export type PushSender = (request: PushRequest) => Promise<PushAttemptResult>;

export interface PushSenderOptions {
  clock: Clock;
  timeoutMs: number;
  userAgent: string;
}

export function createPushSender(options: PushSenderOptions): PushSender {
  return (request) =>
    new Promise<PushAttemptResult>((resolve) => {
      const { url, address } = request.target;
      const shown = `${url.protocol}//${url.host}`;
      let settled = false;
      const finish = (result: PushAttemptResult) => {
        if (settled) return;
        settled = true;
        options.clock.clearTimeout(timer);
        resolve(result);
      };
      const headers: Record<string, string> = {
        'content-type': request.contentType,
        'content-length': String(Buffer.byteLength(request.body)),
        'user-agent': options.userAgent,
        'accept-encoding': 'identity',
      };
      if (request.token !== undefined) headers[NOTIFICATION_TOKEN_HEADER] = request.token;
      if (request.authentication) {
        headers['authorization'] = `${request.authentication.scheme} ${request.authentication.credentials}`;
      }
      const client = url.protocol === 'https:' ? https : http;
      const outgoing = client.request(url, {
        method: 'POST',
        agent: false,
        headers,
        ...(address ? { lookup: pinnedLookup(address) } : {}),
      });
      const timer = options.clock.setTimeout(
        () => {
          outgoing.destroy();
          finish({ kind: 'retry', reason: `${shown} did not answer within ${options.timeoutMs} ms` });
        },
        options.timeoutMs,
        { keepAlive: true },
      );
      outgoing.on('error', (error) => finish({ kind: 'retry', reason: `${shown}: ${error.message}` }));
      outgoing.on('response', (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) response.destroy();
        });
        response.on('error', () => undefined);
        response.on('close', () => finish(classify(status, shown)));
        response.on('end', () => finish(classify(status, shown)));
      });
      outgoing.end(request.body);
    });
}

function classify(status: number, shown: string): PushAttemptResult {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status >= 300 && status < 400)
    return {
      kind: 'rejected',
      reason: `${shown} answered a redirect (${status}); redirects are not followed`,
    };
  if (status >= 500 || RETRYABLE_STATUSES.has(status))
    return { kind: 'retry', reason: `${shown} answered HTTP ${status}` };
  return { kind: 'rejected', reason: `${shown} answered HTTP ${status}` };
}

/** The socket connects to the checked address whatever the name resolves to now; TLS still verifies the name. */
function pinnedLookup(target: LookupAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all === true)
      (callback as (error: null, addresses: LookupAddress[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
}
