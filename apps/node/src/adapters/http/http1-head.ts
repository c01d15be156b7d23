// HTTP/1.1 message heads for the node's own client (node-http-client.ts): the request head it writes and the
// response head it parses. Pure functions, so the rules (header validation, framing) are tested on their own.

/** A response the client cannot read (malformed head, bad framing, a body cut short). The socket is destroyed. */
export class HttpProtocolError extends Error {
  readonly code: string;
  constructor(message: string, code = 'ERR_HTTP_PROTOCOL') {
    super(message);
    this.name = 'HttpProtocolError';
    this.code = code;
  }
}

/** A request the client refuses to write (a header name or value that would break the message). */
export class HttpRequestError extends Error {
  readonly code: string;
  constructor(message: string, code: string) {
    super(message);
    this.name = 'HttpRequestError';
    this.code = code;
  }
}

/** The largest response head (status line and headers, or chunked trailers) read before it is an error. */
export const MAX_HEAD_BYTES = 64 * 1024;

// RFC 9110 token characters.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Anything but visible ASCII, space and tab: the common case is ASCII, checked first.
const NOT_PLAIN_ASCII = /[^\t\x20-\x7e]/;
// node:http's rule: latin-1 text is allowed in a value, control characters (CR, LF, NUL...) never.
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** The parts of a request URL the head and the pool need, computed once per URL. */
export interface RequestTarget {
  /** Pool key: scheme, host and port. */
  key: string;
  secure: boolean;
  /** The host to connect to (IPv6 without brackets). */
  hostname: string;
  port: number;
  /** `path?query` as it goes on the request line. */
  path: string;
  /** The Host header (URL.host: IPv6 bracketed, the scheme's default port left out). */
  host: string;
  /** `Basic ...` from the URL's credentials, if it has any. */
  basicAuth: string | undefined;
}

export function requestTarget(url: URL): RequestTarget {
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') {
    throw new HttpRequestError(`unsupported protocol ${url.protocol}`, 'ERR_INVALID_PROTOCOL');
  }
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : secure ? 443 : 80;
  let basicAuth: string | undefined;
  if (url.username || url.password) {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    basicAuth = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  return {
    key: `${url.protocol}//${url.host}:${port}`,
    secure,
    hostname,
    port,
    path: `${url.pathname || '/'}${url.search}`,
    host: url.host,
    basicAuth,
  };
}

/** A comma-separated header value (lower-cased) lists `token`. */
function hasToken(value: string, token: string): boolean {
  if (value === token) return true;
  for (const part of value.split(',')) if (part.trim() === token) return true;
  return false;
}

/** A request head ready to write. */
export interface RequestHead {
  text: string;
  /** A header value holds latin-1 text: the head must be written as latin-1, apart from the body. */
  latin1: boolean;
  /** The caller asked for `connection: close`: the socket is not reused afterwards. */
  close: boolean;
}

/**
 * The request head. Header names differing only in case are one header, the last one given winning (names as
 * given); content-length and transfer-encoding are the client's (a string body is sent with its length); Host
 * and the URL's credentials are added unless given; `connection: keep-alive` unless a connection header is given.
 */
export function requestHead(
  method: string,
  target: RequestTarget,
  headers: Record<string, string>,
  body: string | undefined,
): RequestHead {
  const names: string[] = [];
  const lowers: string[] = [];
  const values: string[] = [];
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (lower === 'content-length' || lower === 'transfer-encoding') continue;
    const at = lowers.indexOf(lower);
    if (at < 0) {
      names.push(name);
      lowers.push(lower);
      values.push(headers[name]);
    } else {
      names[at] = name;
      values[at] = headers[name];
    }
  }
  let text = `${method} ${target.path} HTTP/1.1\r\n`;
  let latin1 = false;
  let close = false;
  let hasHost = false;
  let hasAuthorization = false;
  let hasConnection = false;
  for (let index = 0; index < names.length; index += 1) {
    const name = names[index];
    const value = values[index] as string | undefined;
    // The type says string; a JavaScript caller may still leave one out (node:http refused that too).
    if (typeof value !== 'string') {
      throw new HttpRequestError(`no value for HTTP header ${name}`, 'ERR_HTTP_INVALID_HEADER_VALUE');
    }
    if (!TOKEN.test(name)) {
      throw new HttpRequestError(
        `invalid HTTP header name ${JSON.stringify(name)}`,
        'ERR_INVALID_HTTP_TOKEN',
      );
    }
    if (NOT_PLAIN_ASCII.test(value)) {
      if (INVALID_VALUE.test(value)) {
        throw new HttpRequestError(
          `invalid character (CR, LF or another control character) in the value of header ${name}`,
          'ERR_INVALID_CHAR',
        );
      }
      latin1 = true;
    }
    const lower = lowers[index];
    if (lower === 'host') hasHost = true;
    else if (lower === 'authorization') hasAuthorization = true;
    else if (lower === 'connection') {
      hasConnection = true;
      close = hasToken(value.toLowerCase(), 'close');
    }
    text += `${name}: ${value}\r\n`;
  }
  if (!hasHost) text += `Host: ${target.host}\r\n`;
  if (!hasAuthorization && target.basicAuth !== undefined) text += `Authorization: ${target.basicAuth}\r\n`;
  if (!hasConnection) text += 'Connection: keep-alive\r\n';
  if (body !== undefined) text += `content-length: ${Buffer.byteLength(body, 'utf8')}\r\n`;
  // As node:http: a POST without a body says so (a GET says nothing).
  else if (method === 'POST') text += 'content-length: 0\r\n';
  return { text: `${text}\r\n`, latin1, close };
}

/** How the response body is delimited: none (HEAD, 1xx, 204, 304), content-length, chunked, or the close. */
export type Framing = 'none' | 'length' | 'chunked' | 'close';

export interface ResponseHead {
  status: number;
  statusText: string;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Map<string, string>;
  framing: Framing;
  /** Body length for 'length' framing. */
  length: number;
  /** The connection may carry another request once this response is read. */
  keepAlive: boolean;
  /** The server's `keep-alive: timeout=N` hint in ms (how long it keeps an idle connection), if it gave one. */
  idleHintMs: number | undefined;
}

const DIGITS = /^\d+$/;

/** RFC 9110 token characters, by character code (ASCII only). */
const TOKEN_CHARS = new Uint8Array(128);
for (const char of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
  TOKEN_CHARS[char.charCodeAt(0)] = 1;
}

function isTokenRange(text: string, start: number, end: number): boolean {
  if (start >= end) return false;
  for (let index = start; index < end; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 128 || TOKEN_CHARS[code] === 0) return false;
  }
  return true;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

function malformedStatusLine(line: string): HttpProtocolError {
  return new HttpProtocolError(`malformed status line ${JSON.stringify(line.slice(0, 100))}`);
}

/**
 * Parses a response head (the text before the blank line, latin-1 decoded, lines ending in CRLF). `headRequest`:
 * the request was HEAD, so the response has no body whatever it says. Throws HttpProtocolError on anything
 * malformed. Index-based (no split, no regex per line): it runs once per upstream response.
 */
export function parseResponseHead(text: string, headRequest: boolean): ResponseHead {
  let lineEnd = text.indexOf('\r\n');
  if (lineEnd < 0) lineEnd = text.length;
  // "HTTP/1.x NNN[ reason]"
  const version = text.charCodeAt(7);
  if (
    lineEnd < 12 ||
    !text.startsWith('HTTP/1.') ||
    (version !== 0x30 && version !== 0x31) ||
    text.charCodeAt(8) !== 0x20 ||
    !isDigit(text.charCodeAt(9)) ||
    !isDigit(text.charCodeAt(10)) ||
    !isDigit(text.charCodeAt(11)) ||
    (lineEnd > 12 && text.charCodeAt(12) !== 0x20)
  ) {
    throw malformedStatusLine(text.slice(0, lineEnd));
  }
  const statusText = lineEnd > 13 ? text.slice(13, lineEnd) : '';
  if (INVALID_VALUE.test(statusText)) throw malformedStatusLine(text.slice(0, lineEnd));
  const http10 = version === 0x30;
  const status = Number(text.slice(9, 12));
  if (status < 100) throw new HttpProtocolError(`invalid status ${text.slice(9, 12)}`);
  const headers = new Map<string, string>();
  let lastName: string | undefined;
  let position = lineEnd + 2;
  while (position < text.length) {
    let end = text.indexOf('\r\n', position);
    if (end < 0) end = text.length;
    const first = text.charCodeAt(position);
    if (first === 0x20 || first === 0x09) {
      // Obsolete line folding: the line continues the previous header's value.
      if (lastName === undefined) throw new HttpProtocolError('malformed response header: folded first line');
      headers.set(lastName, `${headers.get(lastName) ?? ''} ${text.slice(position, end).trim()}`);
      position = end + 2;
      continue;
    }
    const colon = text.indexOf(':', position);
    if (colon < 0 || colon > end || !isTokenRange(text, position, colon)) {
      throw new HttpProtocolError(
        `malformed response header line ${JSON.stringify(text.slice(position, Math.min(end, position + 100)))}`,
      );
    }
    const name = text.slice(position, colon).toLowerCase();
    const value = text.slice(colon + 1, end).trim();
    if (INVALID_VALUE.test(value))
      throw new HttpProtocolError(`invalid character in response header ${name}`);
    const previous = headers.get(name);
    headers.set(name, previous === undefined ? value : `${previous}, ${value}`);
    lastName = name;
    position = end + 2;
  }
  const connection = headers.get('connection')?.toLowerCase();
  let keepAlive = http10
    ? connection !== undefined && hasToken(connection, 'keep-alive')
    : connection === undefined || !hasToken(connection, 'close');
  let framing: Framing;
  let length = 0;
  const transferEncoding = headers.get('transfer-encoding');
  const contentLength = headers.get('content-length');
  if (headRequest || status < 200 || status === 204 || status === 304) {
    framing = 'none';
  } else if (transferEncoding !== undefined) {
    const codings = transferEncoding.toLowerCase().split(',');
    if (codings[codings.length - 1].trim() === 'chunked') {
      framing = 'chunked';
    } else {
      framing = 'close';
    }
    // Both length and chunking: the length is ignored, and the connection not trusted with another message.
    if (contentLength !== undefined) keepAlive = false;
  } else if (contentLength !== undefined) {
    const parts = contentLength.split(',');
    const first = parts[0].trim();
    for (const part of parts) {
      if (!DIGITS.test(part.trim()) || part.trim() !== first) {
        throw new HttpProtocolError(`invalid content-length ${JSON.stringify(contentLength.slice(0, 100))}`);
      }
    }
    length = Number(first);
    if (!Number.isSafeInteger(length)) throw new HttpProtocolError(`invalid content-length ${first}`);
    framing = 'length';
  } else {
    framing = 'close';
  }
  if (framing === 'close') keepAlive = false;
  let idleHintMs: number | undefined;
  const keepAliveHeader = keepAlive ? headers.get('keep-alive') : undefined;
  if (keepAliveHeader !== undefined) {
    const timeout = /(?:^|[\s,])timeout=(\d+)/i.exec(keepAliveHeader);
    if (timeout !== null) idleHintMs = Number(timeout[1]) * 1000;
  }
  return { status, statusText, headers, framing, length, keepAlive, idleHintMs };
}
