// The affinity bench's load: N conversations of M turns each, like agent loops. Every conversation starts with
// the same system prompt (shared by all, as one agent's tool descriptions are) and a task of its own; each next
// turn appends the previous answer (as the assistant message, exactly as streamed) and a new user message (a tool
// result) after a pause in `shape.thinkMs` (the tool running: seeded, so every run waits alike), so the context
// grows turn by turn. A conversation's first turn waits up to `shape.startSpreadMs` (seeded) so that they do not
// all start at once. Turns of one conversation are sequential; at most `concurrency` conversations run at once. Every turn is a streamed chat completion; the time to first token is measured from
// sending the request to the first content delta. With `sessionHeader`, each request carries
// `x-session-id: <conversation>` (an explicit affinity key); without it the edge can only key on the messages.
import http from 'node:http';
import { summarize } from './load.mjs';

const VOCABULARY = (
  'the a file function returns value test error config module import export call result line check build ' +
  'request response stream token node edge provider model queue run path type string number object array ' +
  'update change read write open close parse render handle retry timeout cache key hash list map set'
).split(' ');

/** A small seeded PRNG (mulberry32): the same seed gives the same text in every run. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** About `tokens` tokens of text (4 bytes a token, as the prefix cache counts) from `seed`, led by `label`. */
export function filler(label, seed, tokens) {
  const next = random(seed);
  const words = [label];
  let bytes = label.length;
  while (bytes < tokens * 4) {
    const word = VOCABULARY[Math.floor(next() * VOCABULARY.length)];
    words.push(word);
    bytes += word.length + 1;
  }
  return words.join(' ');
}

function hashSeed(text) {
  let hash = 2166136261;
  for (let index = 0; index < text.length; index += 1)
    hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  return hash >>> 0;
}

/**
 * The opening messages of conversation `index` and the user message of its turn `turn` (1-based after the
 * first): deterministic for a given `shape`, so the runs that are compared send the same prompts.
 */
export function conversationText(shape, index) {
  const system = filler(
    'You are a coding agent. Tools:',
    hashSeed(`${shape.seed}:system`),
    shape.systemTokens,
  );
  const task = filler(`Task ${index}:`, hashSeed(`${shape.seed}:task:${index}`), shape.taskTokens);
  const toolResult = (turn) =>
    filler(
      `Tool result ${index}.${turn}:`,
      hashSeed(`${shape.seed}:tool:${index}:${turn}`),
      shape.turnTokens,
    );
  return { system, task, toolResult };
}

/**
 * One streamed chat completion: resolves `{ status, ttftMs, totalMs, text, provider, queueMs }` (status 0 and
 * `error` on a transport failure or timeout; `text` is the concatenated content deltas).
 */
function streamTurn({ target, agent, body, headers, timeoutMs }) {
  return new Promise((resolve) => {
    const payload = Buffer.from(JSON.stringify(body));
    const start = performance.now();
    let ttftMs;
    let text = '';
    let carry = '';
    let streamError;
    let settled = false;
    const settle = (value) => {
      if (settled) return;
      settled = true;
      resolve({ totalMs: performance.now() - start, ...value });
    };
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': payload.length, ...headers },
      },
      (response) => {
        const provider = response.headers['x-iop-provider'];
        const queueMs = Number(response.headers['x-iop-queue-ms'] ?? Number.NaN);
        response.setEncoding('utf8');
        if (response.statusCode !== 200) {
          let errorBody = '';
          response.on('data', (chunk) => (errorBody = (errorBody + chunk).slice(0, 2000)));
          response.on('end', () =>
            settle({ status: response.statusCode, error: errorBody, text: '', provider, queueMs }),
          );
          return;
        }
        response.on('data', (chunk) => {
          const lines = (carry + chunk).split('\n');
          carry = lines.pop() ?? '';
          for (const line of lines) {
            if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
            let event;
            try {
              event = JSON.parse(line.slice(6));
            } catch {
              continue;
            }
            if (event?.error) streamError = JSON.stringify(event.error).slice(0, 2000);
            const content = event?.choices?.[0]?.delta?.content;
            if (typeof content === 'string' && content !== '') {
              if (ttftMs === undefined) ttftMs = performance.now() - start;
              text += content;
            }
          }
        });
        response.on('end', () => {
          // A stream that failed after it started (an error event) is a failed turn, whatever came before it.
          if (streamError !== undefined) settle({ status: 200, error: streamError, text, provider, queueMs });
          else if (ttftMs === undefined)
            settle({ status: 200, error: 'stream ended without content', text, provider, queueMs });
          else settle({ status: 200, ttftMs, text, provider, queueMs });
        });
        response.on('error', (error) => settle({ status: 0, error: error.message, text, provider, queueMs }));
      },
    );
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => settle({ status: 0, error: error.message, text: '' }));
    request.end(payload);
  });
}

/**
 * Runs the workload against `url` (the OpenAI surface's base URL), or conversation i against `urlFor(i)` (to pin
 * conversations to backends directly, the best placement can do; `providerOf(i)` names the backend where no
 * x-iop-provider header does). `shape`: `{ seed, conversations, turns,
 * concurrency, thinkMs: [least, most], startSpreadMs, systemTokens, taskTokens, turnTokens }`. A conversation whose turn fails stops there (its next
 * turn would lack the answer); the failure is counted.
 * @returns {Promise<object>} TTFT summaries (all turns, first turns, follow-ups), the provider of every turn
 *   (`x-iop-provider`), how often a follow-up stayed on its previous turn's provider, errors and wall time.
 */
export async function runAgentWorkload({
  url,
  urlFor,
  providerOf,
  model,
  shape,
  sessionHeader,
  sessionPrefix = 'conv',
  timeoutMs = 30_000,
}) {
  const targetOf = (index) => new URL('/v1/chat/completions', urlFor ? urlFor(index) : url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: shape.concurrency });
  const turns = [];
  const errors = [];
  const started = performance.now();
  let nextConversation = 0;

  async function conversation(index) {
    const text = conversationText(shape, index);
    const target = targetOf(index);
    const messages = [
      { role: 'system', content: text.system },
      { role: 'user', content: text.task },
    ];
    const headers = sessionHeader ? { 'x-session-id': `${sessionPrefix}-${index}` } : {};
    let previousProvider;
    const think = random(hashSeed(`${shape.seed}:think:${index}`));
    // Agents do not all start in the same millisecond: a seeded delay before the first turn.
    await new Promise((resolve) => setTimeout(resolve, think() * (shape.startSpreadMs ?? 0)));
    for (let turn = 0; turn < shape.turns; turn += 1) {
      if (turn > 0) {
        // The agent runs the tool the answer asked for before its next turn.
        const [least, most] = shape.thinkMs;
        await new Promise((resolve) => setTimeout(resolve, least + think() * (most - least)));
        messages.push({ role: 'user', content: text.toolResult(turn) });
      }
      const result = await streamTurn({
        target,
        agent,
        headers,
        timeoutMs,
        body: { model, messages, stream: true },
      });
      if (result.status !== 200 || result.ttftMs === undefined || result.error !== undefined) {
        errors.push({ conversation: index, turn, status: result.status, error: result.error });
        return;
      }
      const provider = result.provider ?? providerOf?.(index);
      turns.push({
        conversation: index,
        turn,
        ttftMs: result.ttftMs,
        totalMs: result.totalMs,
        provider: provider ?? null,
        queueMs: result.queueMs,
        sameProvider: turn > 0 && provider !== undefined && provider === previousProvider,
      });
      previousProvider = provider;
      messages.push({ role: 'assistant', content: result.text });
    }
  }

  async function worker() {
    while (nextConversation < shape.conversations) {
      const index = nextConversation;
      nextConversation += 1;
      await conversation(index);
    }
  }

  await Promise.all(Array.from({ length: Math.min(shape.concurrency, shape.conversations) }, worker));
  agent.destroy();
  const followUps = turns.filter((turn) => turn.turn > 0);
  const providers = {};
  for (const turn of turns)
    providers[turn.provider ?? 'unknown'] = (providers[turn.provider ?? 'unknown'] ?? 0) + 1;
  return {
    requests: shape.conversations * shape.turns,
    completed: turns.length,
    errors: errors.length,
    first_errors: errors.slice(0, 5),
    wall_ms: performance.now() - started,
    ttft: summarize(turns.map((turn) => turn.ttftMs)),
    ttft_first_turns: summarize(turns.filter((turn) => turn.turn === 0).map((turn) => turn.ttftMs)),
    ttft_follow_ups: summarize(followUps.map((turn) => turn.ttftMs)),
    /** x-iop-queue-ms of the turns that carried it (time waiting for a provider slot at the edge). */
    queue_ms: summarize(turns.map((turn) => turn.queueMs).filter(Number.isFinite)),
    follow_ups: followUps.length,
    same_provider_follow_ups: followUps.filter((turn) => turn.sameProvider).length,
    providers,
  };
}
