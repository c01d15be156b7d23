import { describe, expect, it } from '@jest/globals';

import { parseResponseHead, requestHead, requestTarget } from './http1-head.js';

describe('requestTarget', () => {
  it('keeps the path and query, brackets only in the Host header, and the default port in the pool key', () => {
    const target = requestTarget(new URL('https://u:p%40@[::1]/a/b?c=1'));
    expect(target).toMatchObject({
      secure: true,
      hostname: '::1',
      port: 443,
      path: '/a/b?c=1',
      host: '[::1]',
    });
    expect(target.key).toBe('https://[::1]:443');
    expect(target.basicAuth).toBe(`Basic ${Buffer.from('u:p@').toString('base64')}`);
    expect(requestTarget(new URL('http://h:8080')).path).toBe('/');
    expect(() => requestTarget(new URL('ftp://h/'))).toThrow(/unsupported protocol/);
  });
});

describe('requestHead', () => {
  const target = requestTarget(new URL('http://h:1/p'));

  it('writes the request line, the headers once each, Host, keep-alive and the body length', () => {
    const head = requestHead('POST', target, { 'X-A': '1', 'content-length': '99', 'x-a': '2' }, 'é');
    expect(head.text).toBe(
      'POST /p HTTP/1.1\r\nx-a: 2\r\nHost: h:1\r\nConnection: keep-alive\r\ncontent-length: 2\r\n\r\n',
    );
    expect(head).toMatchObject({ latin1: false, close: false });
  });

  it('says content-length: 0 for a POST without a body and nothing for a GET', () => {
    expect(requestHead('POST', target, {}, undefined).text).toContain('content-length: 0\r\n');
    expect(requestHead('GET', target, {}, undefined).text).not.toContain('content-length');
  });

  it('leaves a given Host and Connection alone, and notes connection: close', () => {
    const head = requestHead('GET', target, { host: 'other', Connection: 'Close' }, undefined);
    expect(head.text).toBe('GET /p HTTP/1.1\r\nhost: other\r\nConnection: Close\r\n\r\n');
    expect(head.close).toBe(true);
  });

  it('rejects control characters in values and non-token names, and flags latin-1 values', () => {
    expect(() => requestHead('GET', target, { a: 'x\ny' }, undefined)).toThrow(/invalid character/);
    expect(() => requestHead('GET', target, { a: 'x\u0000' }, undefined)).toThrow(/invalid character/);
    expect(() => requestHead('GET', target, { a: '\u2713' }, undefined)).toThrow(/invalid character/);
    expect(() => requestHead('GET', target, { 'a:b': 'x' }, undefined)).toThrow(/invalid HTTP header name/);
    expect(requestHead('GET', target, { a: 'caf\u00e9' }, undefined).latin1).toBe(true);
    const missing = { a: undefined } as unknown as Record<string, string>;
    expect(() => requestHead('GET', target, missing, undefined)).toThrow(/no value for HTTP header a/);
  });
});

describe('parseResponseHead', () => {
  it('parses the status, the reason and the headers (repeats joined, folded lines continued)', () => {
    const head = parseResponseHead(
      'HTTP/1.1 404 Not Found\r\nA: 1\r\na: 2\r\nB: x\r\n  y\r\ncontent-length: 3',
      false,
    );
    expect(head).toMatchObject({
      status: 404,
      statusText: 'Not Found',
      framing: 'length',
      length: 3,
      keepAlive: true,
    });
    expect(head.headers.get('a')).toBe('1, 2');
    expect(head.headers.get('b')).toBe('x y');
    expect(parseResponseHead('HTTP/1.1 200\r\ncontent-length: 0', false).statusText).toBe('');
  });

  it('frames the body as RFC 9112 says', () => {
    const frame = (text: string, headRequest = false) => {
      const head = parseResponseHead(text, headRequest);
      return [head.framing, head.keepAlive];
    };
    expect(frame('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked')).toEqual(['chunked', true]);
    expect(frame('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 5')).toEqual([
      'chunked',
      false,
    ]);
    expect(frame('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip')).toEqual(['close', false]);
    expect(frame('HTTP/1.1 200 OK')).toEqual(['close', false]);
    expect(frame('HTTP/1.1 200 OK\r\ncontent-length: 5, 5')).toEqual(['length', true]);
    expect(frame('HTTP/1.1 204 No Content\r\ncontent-length: 5')).toEqual(['none', true]);
    expect(frame('HTTP/1.1 200 OK\r\ncontent-length: 5', true)).toEqual(['none', true]);
    expect(frame('HTTP/1.1 200 OK\r\nconnection: keep-alive, close\r\ncontent-length: 1')).toEqual([
      'length',
      false,
    ]);
    expect(frame('HTTP/1.0 200 OK\r\ncontent-length: 1')).toEqual(['length', false]);
    expect(frame('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\ncontent-length: 1')).toEqual(['length', true]);
  });

  it("reads the server's keep-alive timeout hint of a connection it keeps", () => {
    const hint = (text: string) => parseResponseHead(text, false).idleHintMs;
    expect(hint('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nKeep-Alive: timeout=5, max=100')).toBe(5000);
    expect(hint('HTTP/1.1 200 OK\r\ncontent-length: 0')).toBeUndefined();
    expect(
      hint('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\nkeep-alive: timeout=5'),
    ).toBeUndefined();
  });

  it('rejects malformed heads', () => {
    expect(() => parseResponseHead('HTTP/2 200 OK', false)).toThrow(/malformed status line/);
    expect(() => parseResponseHead('HTTP/1.1 099 X', false)).toThrow(/invalid status/);
    expect(() => parseResponseHead('HTTP/1.1 200 OK\r\n: x', false)).toThrow(
      /malformed response header line/,
    );
    expect(() => parseResponseHead('HTTP/1.1 200 OK\r\n folded', false)).toThrow(/folded first line/);
    expect(() => parseResponseHead('HTTP/1.1 200 OK\r\ncontent-length: -1', false)).toThrow(
      /invalid content-length/,
    );
    expect(() => parseResponseHead('HTTP/1.1 200 OK\r\ncontent-length: 1, 2', false)).toThrow(
      /invalid content-length/,
    );
    expect(() => parseResponseHead('HTTP/1.1 200 OK\r\nx: a\u0001', false)).toThrow(/invalid character/);
  });
});
