import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from '@jest/globals';

import { isPlainJsonRequest, JsonBodyError, readJsonBody } from './json-body.js';

/** A request stand-in: a byte stream with headers, ended after `chunks`. */
function request(headers: Record<string, string>, chunks: string[] = []): IncomingMessage {
  const stream = new PassThrough();
  Object.assign(stream, { headers });
  for (const chunk of chunks) stream.write(Buffer.from(chunk));
  stream.end();
  return stream as unknown as IncomingMessage;
}

const json = { 'content-type': 'application/json' };

describe('readJsonBody', () => {
  it('parses a body split across chunks, multi-byte characters included', async () => {
    const text = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo ✓' }] });
    const bytes = Buffer.from(text);
    const stream = new PassThrough();
    Object.assign(stream, { headers: json });
    // Cut inside the multi-byte 'é' so decoding per chunk would corrupt it.
    const cut = bytes.indexOf(Buffer.from('é')) + 1;
    stream.write(bytes.subarray(0, cut));
    stream.end(bytes.subarray(cut));
    await expect(readJsonBody(stream as unknown as IncomingMessage, 1024)).resolves.toEqual(JSON.parse(text));
  });

  it('reads an empty body as {} like express.json', async () => {
    await expect(readJsonBody(request(json), 1024)).resolves.toEqual({});
  });

  it('refuses an empty body as entity.parse.failed when emptyAsObject is false (JSON-RPC)', async () => {
    for (const chunks of [[], ['  \n']]) {
      const error = await readJsonBody(request(json, chunks), 1024, { emptyAsObject: false }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({ type: 'entity.parse.failed', status: 400 });
    }
  });

  it('rejects invalid JSON and non-object JSON as entity.parse.failed (400)', async () => {
    for (const body of ['{"model":', '"just a string"', '42']) {
      const error = await readJsonBody(request(json, [body]), 1024).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(JsonBodyError);
      expect(error).toMatchObject({ type: 'entity.parse.failed', status: 400 });
    }
  });

  it('rejects a body over the limit as entity.too.large (413), declared or counted', async () => {
    const declared = await readJsonBody(request({ ...json, 'content-length': '2048' }, ['{}']), 1024).catch(
      (caught: unknown) => caught,
    );
    expect(declared).toMatchObject({ type: 'entity.too.large', status: 413 });
    const counted = await readJsonBody(request(json, [`{"a":"${'x'.repeat(2000)}"}`]), 1024).catch(
      (caught: unknown) => caught,
    );
    expect(counted).toMatchObject({ type: 'entity.too.large', status: 413 });
  });
});

describe('isPlainJsonRequest', () => {
  it('takes application/json in UTF-8 without content-encoding, and leaves the rest to express.json', () => {
    expect(isPlainJsonRequest(request(json))).toBe(true);
    expect(isPlainJsonRequest(request({ 'content-type': 'Application/JSON; charset="UTF-8"' }))).toBe(true);
    expect(isPlainJsonRequest(request({ 'content-type': 'application/json; charset=latin1' }))).toBe(false);
    expect(isPlainJsonRequest(request({ 'content-type': 'application/merge-patch+json' }))).toBe(false);
    expect(isPlainJsonRequest(request({ ...json, 'content-encoding': 'gzip' }))).toBe(false);
    expect(isPlainJsonRequest(request({}))).toBe(false);
  });
});
