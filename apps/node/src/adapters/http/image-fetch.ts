// Fetches a remote image on a caller's behalf (ChatMessage.image_urls for a backend that takes only inline images,
// Ollama, when the model sets `fetch_image_urls`). The URL comes from an untrusted request, so the fetch is
// bounded: http/https only, no credentials in the URL, no redirects, a size limit (checked against
// content-length and again while reading), a time limit for the whole exchange, an image content-type, and never
// a private, loopback, link-local or multicast address. The host name is resolved first, every address it
// resolves to is checked, and the connection goes to the checked address (the socket's `lookup` answers with it),
// so a DNS answer that changes between check and connect cannot reach an address that was not checked. The
// fetches of one run share an ImageByteBudget (`image_limits.max_total_bytes`), charged as bytes arrive, so a
// request naming many URLs cannot make the node hold more than the budget however large each image may be.
import { systemClock } from '@iop/clock';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress, type AddressCheck } from '@iop/config';

import type { AbortSignalLike } from '../cancellation.js';

export const DEFAULT_IMAGE_MAX_BYTES = 20 * 1024 * 1024;
export const DEFAULT_IMAGE_TIMEOUT_MS = 10_000;
/** Upper bounds of the settings: a fetch never holds more memory or time than this. */
export const MAX_IMAGE_MAX_BYTES = 64 * 1024 * 1024;
export const MAX_IMAGE_TIMEOUT_MS = 60_000;
/** Bytes one run may fetch over all its image URLs when the run names no budget (RunRequest field 23 = 0). */
export const DEFAULT_IMAGE_MAX_TOTAL_BYTES = 64 * 1024 * 1024;

/** Why a fetch failed (the `cause` of an `image_fetch_failed` run error). */
export type ImageFetchCause =
  | 'invalid_url'
  | 'blocked_address'
  | 'dns_failed'
  | 'connect_failed'
  | 'redirect_refused'
  | 'http_status'
  | 'not_an_image'
  | 'too_large'
  | 'total_too_large'
  | 'timeout'
  | 'cancelled';

export class ImageFetchError extends Error {
  override readonly name = 'ImageFetchError';
  readonly code = 'image_fetch_failed';
  constructor(
    readonly reason: ImageFetchCause,
    message: string,
  ) {
    super(message);
  }
}

/** Resolves a host name to every address it has. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export interface ImageFetcherOptions {
  maxBytes?: number;
  timeoutMs?: number;
  /** Defaults to `isPublicAddress`; a test passes a check that also allows 127.0.0.1. */
  allowAddress?: AddressCheck;
  resolve?: Resolver;
}

export interface FetchedImage {
  /** The body, base64 (no data: prefix). */
  base64: string;
  contentType: string;
  bytes: number;
}

/**
 * The bytes one run may fetch over all its image URLs together, shared by its fetches and charged as each body
 * arrives (not after buffering it): the fetch that passes the limit stops reading at once.
 */
export class ImageByteBudget {
  private used = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit <= 0)
      throw new RangeError(`an image byte budget must be a positive integer, got ${limit}`);
  }

  /** Bytes still allowed. */
  get remaining(): number {
    return Math.max(0, this.limit - this.used);
  }

  /** Charges `bytes`; false once the total is over the limit. */
  charge(bytes: number): boolean {
    this.used += bytes;
    return this.used <= this.limit;
  }

  /** The failure of a fetch that would pass the limit. */
  exceeded(): ImageFetchError {
    return new ImageFetchError(
      'total_too_large',
      `the run's images are more than the ${this.limit} bytes allowed in total (image_limits.max_total_bytes)`,
    );
  }
}

/** Fetches one image; with `budget`, its bytes also count against the run's total (ImageByteBudget). */
export type ImageFetcher = (
  url: string,
  signal?: AbortSignalLike,
  budget?: ImageByteBudget,
) => Promise<FetchedImage>;

const systemResolve: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses);
    });
  });

function bounded(value: number | undefined, fallback: number, max: number, what: string): number {
  const chosen = value ?? fallback;
  if (!Number.isInteger(chosen) || chosen <= 0 || chosen > max)
    throw new RangeError(`${what} must be an integer from 1 to ${max}, got ${chosen}`);
  return chosen;
}

export function createImageFetcher(options: ImageFetcherOptions = {}): ImageFetcher {
  const maxBytes = bounded(options.maxBytes, DEFAULT_IMAGE_MAX_BYTES, MAX_IMAGE_MAX_BYTES, 'maxBytes');
  const timeoutMs = bounded(options.timeoutMs, DEFAULT_IMAGE_TIMEOUT_MS, MAX_IMAGE_TIMEOUT_MS, 'timeoutMs');
  const allowAddress = options.allowAddress ?? isPublicAddress;
  const resolve = options.resolve ?? systemResolve;

  return async (rawUrl, signal, budget) => {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw new ImageFetchError('invalid_url', 'the image URL is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ImageFetchError(
        'invalid_url',
        `only http and https image URLs are fetched, not ${url.protocol}`,
      );
    if (url.username !== '' || url.password !== '')
      throw new ImageFetchError('invalid_url', 'an image URL must not carry credentials');
    const shown = `${url.protocol}//${url.host}${url.pathname}`;
    // One deadline for resolution, connection and the whole body.
    const controller = new AbortController();
    const timer = systemClock.setTimeout(() => controller.abort(), timeoutMs, { keepAlive: true });
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const hostname = url.hostname.replace(/^\[|\]$/g, '');
      const target = await checkedAddress(hostname, resolve, allowAddress, controller.signal, shown);
      return await get(url, target, { maxBytes, budget }, controller.signal, shown);
    } catch (error) {
      if (error instanceof ImageFetchError) throw error;
      if (signal?.aborted) throw new ImageFetchError('cancelled', `fetching ${shown} was cancelled`);
      if (controller.signal.aborted)
        throw new ImageFetchError('timeout', `fetching ${shown} took longer than ${timeoutMs} ms`);
      throw new ImageFetchError('connect_failed', `fetching ${shown} failed: ${(error as Error).message}`);
    } finally {
      systemClock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  };
}

async function checkedAddress(
  hostname: string,
  resolve: Resolver,
  allowAddress: AddressCheck,
  signal: AbortSignal,
  shown: string,
): Promise<LookupAddress> {
  const literal = isIP(hostname);
  let addresses: LookupAddress[];
  if (literal !== 0) addresses = [{ address: hostname, family: literal }];
  else {
    try {
      addresses = await abortable(resolve(hostname), signal);
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ImageFetchError('dns_failed', `the image host of ${shown} does not resolve`);
    }
  }
  if (addresses.length === 0)
    throw new ImageFetchError('dns_failed', `the image host of ${shown} does not resolve`);
  // Every address is checked: a name with one public and one private address is refused as a whole.
  for (const entry of addresses) {
    const family = entry.family === 6 ? 6 : 4;
    if (!allowAddress(entry.address, family))
      throw new ImageFetchError(
        'blocked_address',
        `the image host of ${shown} resolves to ${entry.address}, a private, loopback, link-local or multicast address`,
      );
  }
  return addresses[0];
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

function get(
  url: URL,
  target: LookupAddress,
  limits: { maxBytes: number; budget: ImageByteBudget | undefined },
  signal: AbortSignal,
  shown: string,
): Promise<FetchedImage> {
  // The socket connects to the checked address whatever the name resolves to now; TLS still verifies the name.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all === true)
      (callback as (error: null, addresses: LookupAddress[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const { maxBytes, budget } = limits;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<FetchedImage>((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: 'GET',
        lookup: pinned,
        signal,
        agent: false,
        headers: { accept: 'image/*', 'accept-encoding': 'identity' },
      },
      (response) => {
        const fail = (error: ImageFetchError) => {
          response.destroy();
          reject(error);
        };
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400)
          return fail(
            new ImageFetchError(
              'redirect_refused',
              `${shown} answered a redirect (${status}); redirects are not followed`,
            ),
          );
        if (status !== 200)
          return fail(new ImageFetchError('http_status', `${shown} answered HTTP ${status}`));
        const contentType =
          (response.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
        if (!contentType.startsWith('image/'))
          return fail(
            new ImageFetchError(
              'not_an_image',
              `${shown} is not an image (content-type '${contentType || 'none'}')`,
            ),
          );
        const declared = Number(response.headers['content-length'] ?? NaN);
        if (Number.isFinite(declared) && declared > maxBytes)
          return fail(
            new ImageFetchError(
              'too_large',
              `${shown} is ${declared} bytes, more than the ${maxBytes} allowed`,
            ),
          );
        if (budget && Number.isFinite(declared) && declared > budget.remaining)
          return fail(budget.exceeded());
        const chunks: Buffer[] = [];
        let bytes = 0;
        let failed = false;
        response.on('data', (chunk: Buffer) => {
          if (failed) return;
          bytes += chunk.length;
          if (bytes > maxBytes) {
            failed = true;
            fail(new ImageFetchError('too_large', `${shown} is more than the ${maxBytes} bytes allowed`));
            return;
          }
          if (budget && !budget.charge(chunk.length)) {
            failed = true;
            fail(budget.exceeded());
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () =>
          resolve({ base64: Buffer.concat(chunks, bytes).toString('base64'), contentType, bytes }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}
