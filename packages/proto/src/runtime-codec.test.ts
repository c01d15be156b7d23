// The generated code against its .proto source: every Envelope case is written under the field number the .proto
// gives it, and messages survive a round trip (bytes included).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runtime } from './index.js';

const PROTO = readFileSync(path.join(import.meta.dirname, '../../../proto/iop/runtime.proto'), 'utf8');

interface Codec {
  fromPartial(fields: object): unknown;
}

/** `Type field_name = N` of the Envelope's oneof, by camelCase case name. */
function envelopeFields(): Map<string, { type: string; number: number }> {
  const body = /message Envelope \{[\s\S]*?oneof msg \{([\s\S]*?)\n {2}\}/.exec(PROTO)?.[1] ?? '';
  const fields = new Map<string, { type: string; number: number }>();
  for (const [, type, name, number] of body.matchAll(/^\s+(\w+) (\w+) = (\d+);/gm)) {
    const caseName = name.replace(/_(\w)/g, (_m, letter: string) => letter.toUpperCase());
    fields.set(caseName, { type, number: Number(number) });
  }
  return fields;
}

describe('generated runtime code', () => {
  it('writes each Envelope case under the field number runtime.proto gives it', () => {
    const fields = envelopeFields();
    expect(fields.size).toBeGreaterThanOrEqual(20);
    for (const [name, { type, number }] of fields) {
      const codec = (runtime as unknown as Record<string, Codec>)[type];
      const value = { $case: name, [name]: codec?.fromPartial({}) } as unknown as runtime.Envelope['msg'];
      const bytes = runtime.Envelope.encode({ requestId: '', msg: value }).finish();
      // An empty sub-message: tag (field << 3 | length-delimited), then length 0.
      const tag = (number << 3) | 2;
      const expected = tag < 128 ? [tag, 0] : [(tag & 0x7f) | 0x80, tag >> 7, 0];
      expect({ name, bytes: [...bytes] }).toEqual({ name, bytes: expected });
    }
  });

  it('round-trips a run request with model access and a model call with its bytes', () => {
    const request = runtime.RunRequest.fromPartial({
      runId: 'run-1',
      parentRunId: 'run-0',
      modelAccess: { apiKey: 'iop-run-secret', model: 'qwen' },
      messages: [{ role: 'user', content: 'hi', imageUrls: ['https://example.test/a.png'] }],
    });
    expect(runtime.RunRequest.decode(runtime.RunRequest.encode(request).finish())).toEqual(request);

    const data = Buffer.from([0, 1, 2, 255]);
    const envelope: runtime.Envelope = {
      requestId: '',
      msg: { $case: 'modelCallData', modelCallData: { callId: 'c-1', data } },
    };
    const decoded = runtime.Envelope.decode(runtime.Envelope.encode(envelope).finish());
    expect(decoded.msg?.$case).toBe('modelCallData');
    expect(decoded.msg?.$case === 'modelCallData' && [...decoded.msg.modelCallData.data]).toEqual([
      0, 1, 2, 255,
    ]);
  });
});
