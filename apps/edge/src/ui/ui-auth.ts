// Who may use the dashboard's API (routes /api/v1/login, /api/v1/logout and the check before every other /api
// call). With a token (refresh.admin_token) a request needs `Authorization: Bearer <token>` (scripts) or the
// `iop_ui_session` cookie that a login sets after checking the token: a random login id (ui-logins.ts) — never the
// token — HttpOnly, SameSite=Strict, Secure over HTTPS, with an expiry; logout forgets it. Failed logins are
// throttled per client address and edge-wide (login-throttle.ts, 429 + Retry-After). Without a token (loopback
// only, ui-surface.ts) every request is authorized.
import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import { UiError } from './errors.js';
import { createLoginThrottle, type LoginThrottleLimits } from './login-throttle.js';
import { checkMutation, readJson, sendJson } from './ui-http.js';
import { createUiLogins, type UiLoginLimits } from './ui-logins.js';

/**
 * The login cookie: a random login id, never the admin token. Its name predates the UiLogin naming and stays, so an
 * upgrade does not sign everyone out.
 */
const UI_COOKIE = 'iop_ui_session';

export interface UiAuthDeps {
  /** '' = no authentication. */
  token: string;
  /** Served over HTTPS: the login cookie is marked Secure. */
  secure?: boolean;
  loginLimits?: Partial<UiLoginLimits>;
  loginThrottle?: Partial<LoginThrottleLimits>;
  maxBodyBytes: number;
  clock: Clock;
  logger: Logger;
}

export interface UiAuth {
  /** True when the request carries the token or a live login. */
  authorized(request: http.IncomingMessage): boolean;
  /** GET /api/v1/login: whether the app should offer a login and a sign-out (says nothing the form would not). */
  state(response: http.ServerResponse): void;
  /** POST /api/v1/login. */
  login(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
  /** POST /api/v1/logout. */
  logout(request: http.IncomingMessage, response: http.ServerResponse): void;
  /** Live logins. */
  readonly logins: number;
}

export function createUiAuth(deps: UiAuthDeps): UiAuth {
  const { clock, logger } = deps;
  const logins = createUiLogins(clock, deps.loginLimits);
  const throttle = createLoginThrottle(clock, deps.loginThrottle);

  const loginCookie = (value: string, maxAgeSeconds: number): string =>
    `${UI_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${deps.secure ? '; Secure' : ''}`;

  function refuseWhileThrottled(address: string): void {
    const waitMs = throttle.retryAfterMs(address);
    if (waitMs <= 0) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    logger.warn({ client: address, retry_after_s: retryAfterSeconds }, 'ui: login throttled');
    throw new UiError('too_many_attempts', `too many failed logins; try again in ${retryAfterSeconds} s`, {
      retryAfterSeconds,
    });
  }

  return {
    authorized(request) {
      if (!deps.token) return true;
      const header = request.headers.authorization ?? '';
      if (header.startsWith('Bearer ') && sameSecret(header.slice(7), deps.token)) return true;
      const cookie = cookieValue(request.headers.cookie ?? '', UI_COOKIE);
      return cookie !== undefined && logins.valid(cookie);
    },
    state(response) {
      sendJson(response, 200, { token_required: deps.token !== '' });
    },
    async login(request, response) {
      checkMutation(request);
      const address = request.socket.remoteAddress ?? 'unknown';
      refuseWhileThrottled(address);
      const body = await readJson(request, deps.maxBodyBytes);
      if (!deps.token) {
        sendJson(response, 200, { authenticated: true, token_required: false });
        return;
      }
      const token = typeof body.token === 'string' ? body.token : '';
      if (!sameSecret(token, deps.token)) {
        throttle.failed(address);
        logger.warn({ client: address }, 'ui: login with a wrong token');
        throw new UiError('unauthorized', 'wrong token');
      }
      throttle.succeeded(address);
      const login = logins.create();
      const maxAge = Math.max(1, Math.floor((login.expiresAtMs - clock.now()) / 1000));
      response.setHeader('set-cookie', loginCookie(login.id, maxAge));
      sendJson(response, 200, {
        authenticated: true,
        token_required: true,
        expires_at_ms: login.expiresAtMs,
      });
    },
    logout(request, response) {
      checkMutation(request);
      const cookie = cookieValue(request.headers.cookie ?? '', UI_COOKIE);
      if (cookie !== undefined) logins.revoke(cookie);
      response.setHeader('set-cookie', loginCookie('', 0));
      sendJson(response, 200, { authenticated: false });
    },
    get logins() {
      return logins.size;
    },
  };
}

function cookieValue(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) {
      try {
        return decodeURIComponent(rest.join('='));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Compares digests, so neither the length nor a prefix of the token leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string): Buffer => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
