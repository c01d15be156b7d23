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
    const value = String(values[index]);
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
      close = /(?:^|[\s,])close(?:$|[\s,])/i.test(value);
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
}

const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: ([^\r\n]*))?$/;
const DIGITS = /^\d+$/;

/**
 * Parses a response head (the text before the blank line, latin-1 decoded). `headRequest`: the request was HEAD,
 * so the response has no body whatever it says. Throws HttpProtocolError on anything malformed.
 */
export function parseResponseHead(text: string, headRequest: boolean): ResponseHead {
  const lines = text.split('\r\n');
  const statusLine = STATUS_LINE.exec(lines[0]);
  if (statusLine === null) {
    throw new HttpProtocolError(`malformed status line ${JSON.stringify(lines[0].slice(0, 100))}`);
  }
  const http10 = statusLine[1] === '0';
  const status = Number(statusLine[2]);
  if (status < 100) throw new HttpProtocolError(`invalid status ${statusLine[2]}`);
  const headers = new Map<string, string>();
  let lastName: string | undefined;
  for (let index = 1; index < lines.length; index += 1) {
    const line = lines[index];
    const first = line.charCodeAt(0);
    if (first === 0x20 || first === 0x09) {
      // Obsolete line folding: the line continues the previous header's value.
      if (lastName === undefined) throw new HttpProtocolError('malformed response header: folded first line');
      headers.set(lastName, `${headers.get(lastName) ?? ''} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!TOKEN.test(name)) {
      throw new HttpProtocolError(`malformed response header line ${JSON.stringify(line.slice(0, 100))}`);
    }
    const value = line.slice(colon + 1).trim();
    if (INVALID_VALUE.test(value))
      throw new HttpProtocolError(`invalid character in response header ${name}`);
    const lower = name.toLowerCase();
    const previous = headers.get(lower);
    headers.set(lower, previous === undefined ? value : `${previous}, ${value}`);
    lastName = lower;
  }
  const connection = headers.get('connection')?.toLowerCase();
  let keepAlive = http10
    ? connection !== undefined && /(?:^|[\s,])keep-alive(?:$|[\s,])/.test(connection)
    : connection === undefined || !/(?:^|[\s,])close(?:$|[\s,])/.test(connection);
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
  return { status, statusText: statusLine[3] ?? '', headers, framing, length, keepAlive };
}
