// Classifies one `/v1/chat/completions` exchange for the load tests: a success, a well-formed OpenAI error (a JSON
// `{"error":{message,type,param,code}}` body, or an SSE `error` data object that ends the stream), or
// `malformed` with the reason — anything a real OpenAI client could not make sense of (a cut stream without
// `[DONE]` or error, a non-JSON error body, a missing field).

export type ChatOutcome =
  | { kind: 'ok' }
  | { kind: 'aborted' }
  | { kind: 'error'; status: number; code: string }
  | { kind: 'stream-error'; code: string }
  | { kind: 'malformed'; detail: string };

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The problem with an OpenAI error object, or undefined when it is well-formed. */
export function errorObjectProblem(body: unknown): string | undefined {
  if (!isObject(body) || !isObject(body.error)) return `no error object in ${JSON.stringify(body)}`;
  const error = body.error;
  if (typeof error.message !== 'string' || error.message === '') return 'error.message missing';
  if (typeof error.type !== 'string' || error.type === '') return 'error.type missing';
  if (!('param' in error) || (error.param !== null && typeof error.param !== 'string'))
    return 'error.param missing';
  if (!('code' in error) || (error.code !== null && typeof error.code !== 'string'))
    return 'error.code missing';
  return undefined;
}

function errorCode(body: Json): string {
  const error = body.error as Json;
  return typeof error.code === 'string' ? error.code : String(error.type);
}

/** Reads the whole response (throws if the request's signal aborts meanwhile). */
export async function classifyChatOutcome(response: Response, stream: boolean): Promise<ChatOutcome> {
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  if (response.status !== 200) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return {
        kind: 'malformed',
        detail: `status ${response.status} with a non-JSON body: ${text.slice(0, 200)}`,
      };
    }
    const problem = errorObjectProblem(body);
    if (problem) return { kind: 'malformed', detail: `status ${response.status}: ${problem}` };
    return { kind: 'error', status: response.status, code: errorCode(body as Json) };
  }
  if (!stream) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { kind: 'malformed', detail: `200 with a non-JSON body: ${text.slice(0, 200)}` };
    }
    if (!isObject(body) || body.object !== 'chat.completion')
      return { kind: 'malformed', detail: 'not a chat.completion' };
    const choices = body.choices;
    const message = Array.isArray(choices) && isObject(choices[0]) ? choices[0].message : undefined;
    if (!isObject(message) || typeof message.content !== 'string')
      return { kind: 'malformed', detail: 'no message content' };
    return { kind: 'ok' };
  }
  if (!contentType.startsWith('text/event-stream'))
    return { kind: 'malformed', detail: `stream as ${contentType}` };
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length));
  let finished = false;
  for (let index = 0; index < data.length; index += 1) {
    const payload = data[index] ?? '';
    if (payload === '[DONE]') {
      return index === data.length - 1 && finished
        ? { kind: 'ok' }
        : { kind: 'malformed', detail: `[DONE] at ${index}/${data.length}, finish_reason seen: ${finished}` };
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(payload);
    } catch {
      return { kind: 'malformed', detail: `non-JSON SSE data: ${payload.slice(0, 200)}` };
    }
    if (isObject(chunk) && 'error' in chunk) {
      const problem = errorObjectProblem(chunk);
      if (problem) return { kind: 'malformed', detail: `SSE error: ${problem}` };
      const rest = data.slice(index + 1);
      if (rest.some((entry) => entry !== '[DONE]'))
        return { kind: 'malformed', detail: 'chunks after an SSE error' };
      return { kind: 'stream-error', code: errorCode(chunk) };
    }
    if (!isObject(chunk) || chunk.object !== 'chat.completion.chunk') {
      return { kind: 'malformed', detail: `not a chunk: ${payload.slice(0, 200)}` };
    }
    const choices = chunk.choices;
    if (Array.isArray(choices) && isObject(choices[0]) && typeof choices[0].finish_reason === 'string')
      finished = true;
  }
  return { kind: 'malformed', detail: `stream ended without [DONE] or error after ${data.length} events` };
}
