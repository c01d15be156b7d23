// An agent run watched while it runs: a streamed `/v1/chat/completions` request for an agent model (the testkit
// fake CLI in its `--model-calls` mode), its text collected as it arrives, so a test can act in the middle of the
// run — read the run's endpoint and secret from the agent's first line, wait for its first model call, or cut
// the connection (a client disconnect).
import { waitUntil } from './e2e-processes.js';

export interface AgentStream {
  /** The edge's id of the agent run (`x-iop-run-id`). */
  readonly runId: string;
  /** The agent's output so far. */
  text(): string;
  /** The agent's output lines so far. */
  lines(): string[];
  /** Waits until a line matches `pattern`; returns its match. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Closes the connection (the client goes away); the read loop ends. */
  abort(): void;
  /** Settles when the stream ends (also when aborted): the SSE error object when the stream ended with one. */
  readonly ended: Promise<{ error?: { code?: string; message?: string } }>;
}

/** Starts an agent run over the edge's OpenAI surface (`baseUrl` without `/v1`), streamed. */
export async function startAgentStream(
  baseUrl: string,
  model: string,
  prompt: string,
  apiKey = 'unused',
): Promise<AgentStream> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: prompt }] }),
    signal: controller.signal,
  });
  if (response.status !== 200 || !response.body) {
    throw new Error(`agent run refused: ${response.status} ${await response.text()}`);
  }
  const runId = response.headers.get('x-iop-run-id') ?? '';
  let text = '';
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const ended = (async () => {
    let pending = '';
    let error: { code?: string; message?: string } | undefined;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pending += value;
        const events = pending.split('\n');
        pending = events.pop() ?? '';
        for (const line of events) {
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          const data = JSON.parse(line.slice(6)) as {
            choices?: { delta?: { content?: string } }[];
            error?: { code?: string; message?: string };
          };
          if (data.error) error = data.error;
          text += data.choices?.[0]?.delta?.content ?? '';
        }
      }
    } catch (caught) {
      if (!controller.signal.aborted) throw caught;
    }
    return error ? { error } : {};
  })();
  // A failure is reported by `ended`; never an unhandled rejection meanwhile.
  ended.catch(() => undefined);
  const lines = (): string[] => text.split('\n').filter((line) => line !== '');
  return {
    runId,
    text: () => text,
    lines,
    async waitForLine(pattern, timeoutMs = 20_000) {
      let match: RegExpExecArray | undefined;
      await waitUntil(
        () => {
          for (const line of lines()) {
            const found = pattern.exec(line);
            if (found) {
              match = found;
              return true;
            }
          }
          return false;
        },
        timeoutMs,
        () => `agent line ${String(pattern)}; output so far:\n${text}`,
      );
      return match as RegExpExecArray;
    },
    abort: () => controller.abort(),
    ended,
  };
}
