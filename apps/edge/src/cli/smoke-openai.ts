// `iop-edge smoke openai --model <m> [--url U] [--api-key K] [--config P] [--timeout-ms N]`: sends one real chat
// completion and one streamed one to a running edge and prints pass/fail with timings; exit 0 when both pass.
// Without --url the address comes from the config's openai.listen (wildcards become loopback), else
// http://127.0.0.1:18081. The key comes from --api-key, IOP_OPENAI_API_KEY, or the config's first api_keys entry
// written in clear.
import type { EdgeConfig } from '@iop/config';
import { localUrl, parseListenAddress } from '../net/listen-address.js';
import { parseFlags, stringFlag, UsageError, writeLine, type CliCommand, type CliIo } from './command.js';
import { loadCommandConfig } from './config-source.js';

export const DEFAULT_SMOKE_URL = 'http://127.0.0.1:18081';
const PROMPT = 'Reply with the single word: pong';

export interface SmokeOptions {
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
  fetch: typeof fetch;
  out: NodeJS.WritableStream;
}

export interface SmokeStepResult {
  name: string;
  ok: boolean;
  totalMs: number;
  /** Streaming only: time to the first content delta. */
  firstTokenMs?: number;
  overheadMs?: string;
  detail: string;
}

export const smokeOpenAICommand: CliCommand = {
  path: ['smoke', 'openai'],
  summary: 'Send a chat completion and a streamed one to the OpenAI-compatible API and report pass/fail.',
  usage: 'smoke openai --model <model> [--url U] [--api-key K] [--config P] [--timeout-ms N]',
  async run(argv, io) {
    const flags = parseFlags(argv, {
      model: { type: 'string', short: 'm' },
      url: { type: 'string' },
      'api-key': { type: 'string' },
      config: { type: 'string', short: 'c' },
      'timeout-ms': { type: 'string' },
    });
    const model = stringFlag(flags, 'model');
    if (!model) throw new UsageError('--model is required');
    const timeoutText = stringFlag(flags, 'timeout-ms') ?? '60000';
    const timeoutMs = Number(timeoutText);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      throw new UsageError(`invalid --timeout-ms '${timeoutText}'`);
    const explicitUrl = stringFlag(flags, 'url');
    const config = explicitUrl && stringFlag(flags, 'api-key') ? undefined : await optionalConfig(flags, io);
    const url = (explicitUrl ?? (config ? configUrl(config) : DEFAULT_SMOKE_URL)).replace(/\/+$/, '');
    const apiKey =
      stringFlag(flags, 'api-key') ??
      io.env['IOP_OPENAI_API_KEY'] ??
      config?.openai.api_keys.find((key) => key.key !== '')?.key;
    writeLine(io.stdout, `smoke openai: ${url} model=${model}`);
    const results = await runOpenAISmoke({ url, model, apiKey, timeoutMs, fetch, out: io.stdout });
    return results.every((result) => result.ok) ? 0 : 1;
  },
};

/** Runs both checks, printing one line per check and a summary. */
export async function runOpenAISmoke(options: SmokeOptions): Promise<SmokeStepResult[]> {
  const results = [await chatStep(options), await streamStep(options)];
  for (const result of results) writeLine(options.out, formatResult(result));
  const passed = results.filter((result) => result.ok).length;
  writeLine(
    options.out,
    `${passed === results.length ? 'PASS' : 'FAIL'} ${passed}/${results.length} checks passed`,
  );
  return results;
}

function formatResult(result: SmokeStepResult): string {
  const timings = [`total=${result.totalMs.toFixed(0)}ms`];
  if (result.firstTokenMs !== undefined) timings.push(`first_token=${result.firstTokenMs.toFixed(0)}ms`);
  // A stream's header carries the edge time before the first byte; the full figure is an HTTP trailer.
  if (result.overheadMs !== undefined) {
    timings.push(
      `${result.name === 'stream' ? 'edge_overhead_to_first_byte' : 'edge_overhead'}=${result.overheadMs}ms`,
    );
  }
  return `${result.ok ? 'PASS' : 'FAIL'} ${result.name.padEnd(6)} ${timings.join(' ')} ${result.detail}`;
}

function request(options: SmokeOptions, stream: boolean): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.apiKey) headers['authorization'] = `Bearer ${options.apiKey}`;
  return options.fetch(`${options.url}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      model: options.model,
      messages: [{ role: 'user', content: PROMPT }],
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    }),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
}

async function chatStep(options: SmokeOptions): Promise<SmokeStepResult> {
  const started = performance.now();
  const fail = (detail: string): SmokeStepResult => ({
    name: 'chat',
    ok: false,
    totalMs: performance.now() - started,
    detail,
  });
  try {
    const response = await request(options, false);
    const text = await response.text();
    if (!response.ok) return fail(`HTTP ${response.status}: ${errorMessage(text)}`);
    const body = JSON.parse(text) as {
      choices?: { message?: { content?: string | null; tool_calls?: unknown[] }; finish_reason?: string }[];
    };
    const choice = body.choices?.[0];
    const content = choice?.message?.content ?? '';
    if (!choice || (content === '' && !choice.message?.tool_calls?.length)) return fail('empty answer');
    return {
      name: 'chat',
      ok: true,
      totalMs: performance.now() - started,
      overheadMs: response.headers.get('x-iop-overhead-ms') ?? undefined,
      detail: `finish=${choice.finish_reason ?? '?'} answer=${JSON.stringify(clip(content))}`,
    };
  } catch (error) {
    return fail(describeError(error));
  }
}

async function streamStep(options: SmokeOptions): Promise<SmokeStepResult> {
  const started = performance.now();
  let firstTokenMs: number | undefined;
  const fail = (detail: string): SmokeStepResult => ({
    name: 'stream',
    ok: false,
    totalMs: performance.now() - started,
    firstTokenMs,
    detail,
  });
  try {
    const response = await request(options, true);
    if (!response.ok) return fail(`HTTP ${response.status}: ${errorMessage(await response.text())}`);
    if (!response.body) return fail('no response body');
    let content = '';
    let chunks = 0;
    let finish: string | undefined;
    let done = false;
    let buffer = '';
    const decoder = new TextDecoder();
    for await (const bytes of response.body) {
      buffer += decoder.decode(bytes as Uint8Array, { stream: true });
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const event = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        boundary = buffer.indexOf('\n\n');
        for (const line of event.split('\n')) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') {
            done = true;
            continue;
          }
          const chunk = JSON.parse(data) as {
            error?: { message?: string };
            choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
          };
          if (chunk.error) return fail(`stream error: ${chunk.error.message ?? 'unknown'}`);
          chunks += 1;
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) {
            firstTokenMs ??= performance.now() - started;
            content += delta;
          }
          finish = chunk.choices?.[0]?.finish_reason ?? finish;
        }
      }
    }
    if (!done) return fail('stream ended without [DONE]');
    if (!finish) return fail('no finish_reason in the stream');
    return {
      name: 'stream',
      ok: true,
      totalMs: performance.now() - started,
      firstTokenMs,
      overheadMs: response.headers.get('x-iop-overhead-ms') ?? undefined,
      detail: `chunks=${chunks} finish=${finish} answer=${JSON.stringify(clip(content))}`,
    };
  } catch (error) {
    return fail(describeError(error));
  }
}

async function optionalConfig(
  flags: ReturnType<typeof parseFlags>,
  io: CliIo,
): Promise<EdgeConfig | undefined> {
  const explicit = stringFlag(flags, 'config');
  try {
    const loaded = await loadCommandConfig(explicit, io);
    if (loaded.result.ok) return loaded.result.config;
    if (explicit) throw new UsageError(`${loaded.path} is not a valid config; run 'iop-edge config check'`);
  } catch (error) {
    if (explicit) throw error;
  }
  return undefined;
}

function configUrl(config: EdgeConfig): string {
  const { host, port } = parseListenAddress(config.openai.listen);
  return localUrl(host, port);
}

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string; code?: string } };
    if (body.error) return `${body.error.code ?? 'error'}: ${body.error.message ?? ''}`;
  } catch {
    // not JSON: show the text itself
  }
  return clip(text);
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return `${error.name === 'TimeoutError' ? 'timed out' : error.message}${cause}`;
  }
  return String(error);
}

function clip(text: string, length = 60): string {
  return text.length > length ? `${text.slice(0, length)}…` : text;
}
