// Background responses over HTTP for the e2e tests: create one (`background: true`, expecting 200) and read it
// back (`GET /v1/responses/{id}`, any status), optionally under an API key.
import { expect } from '@jest/globals';
import type { EdgeProcess } from './e2e-processes.js';

export type ResponseBody = Record<string, unknown>;

function authorization(key: string | undefined): Record<string, string> {
  return key === undefined ? {} : { authorization: `Bearer ${key}` };
}

/** POSTs a background response of `model` with `input`; expects 200 and returns the queued Response object. */
export async function createBackgroundResponse(
  edge: EdgeProcess,
  model: string,
  input: string,
  key?: string,
): Promise<ResponseBody> {
  const response = await fetch(`${edge.addresses.openai}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authorization(key) },
    body: JSON.stringify({ model, input, background: true }),
    signal: AbortSignal.timeout(15_000),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as ResponseBody;
}

/** GETs response `id`: its status and body. */
export async function retrieveResponse(
  edge: EdgeProcess,
  id: unknown,
  key?: string,
): Promise<{ status: number; body: ResponseBody }> {
  const response = await fetch(`${edge.addresses.openai}/v1/responses/${String(id)}`, {
    headers: authorization(key),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: response.status, body: (await response.json()) as ResponseBody };
}
