// Playground: pick a models[] id, send a prompt, watch the streamed answer with its provider and timings. The
// prompt goes through the same admission as an OpenAI request (queue, capacity, generation policy).
import { useRef, useState } from 'preact/hooks';
import { playground, type UiOverview, type UiPlaygroundEvents } from '../api.js';
import { count, duration } from '../format.js';

export function PlaygroundView({ overview }: { overview: UiOverview }) {
  const [model, setModel] = useState(overview.models[0]?.id ?? '');
  const [prompt, setPrompt] = useState('');
  const [answer, setAnswer] = useState('');
  const [meta, setMeta] = useState<UiPlaygroundEvents['meta'] | undefined>();
  const [done, setDone] = useState<UiPlaygroundEvents['done'] | undefined>();
  const [error, setError] = useState('');
  const [running, setRunning] = useState(false);
  const abort = useRef<AbortController | undefined>(undefined);

  const send = async () => {
    const controller = new AbortController();
    abort.current = controller;
    setRunning(true);
    setAnswer('');
    setMeta(undefined);
    setDone(undefined);
    setError('');
    try {
      for await (const event of playground({ model, prompt }, controller.signal)) {
        if (event.event === 'meta') setMeta(event.data);
        else if (event.event === 'delta') setAnswer((text) => text + event.data.text);
        else if (event.event === 'done') setDone(event.data);
        else setError(`${event.data.code}: ${event.data.message}`);
      }
    } catch (failure) {
      if (!controller.signal.aborted) setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setRunning(false);
    }
  };

  return (
    <section aria-labelledby="playground-title">
      <h2 id="playground-title">Playground</h2>
      {overview.models.length === 0 ? (
        <p class="muted">No models[] are configured.</p>
      ) : (
        <form
          class="playground"
          onSubmit={(event) => {
            event.preventDefault();
            void send();
          }}
        >
          <label>
            Model{' '}
            <select value={model} onChange={(event) => setModel(event.currentTarget.value)}>
              {overview.models.map((entry) => (
                <option key={entry.id} value={entry.id}>
                  {entry.id}
                </option>
              ))}
            </select>
          </label>
          <label for="prompt">Prompt</label>
          <textarea
            id="prompt"
            rows={4}
            value={prompt}
            onInput={(event) => setPrompt(event.currentTarget.value)}
          />
          <div class="actions">
            <button type="submit" class="primary" disabled={running || !prompt.trim() || !model}>
              Send
            </button>
            <button type="button" disabled={!running} onClick={() => abort.current?.abort()}>
              Stop
            </button>
          </div>
        </form>
      )}
      {meta && (
        <p class="muted" data-testid="playground-meta">
          run {meta.run_id} · provider <strong>{meta.provider}</strong> on {meta.node_id} · queued{' '}
          {duration(meta.queue_ms)}
        </p>
      )}
      <pre class="answer" data-testid="playground-answer" aria-live="polite">
        {answer}
      </pre>
      {done && (
        <p data-testid="playground-done" data-status={done.status}>
          <span class={`badge ${done.status}`}>{done.status}</span> in {duration(done.duration_ms)} · overhead{' '}
          {duration(done.overhead_ms)} · {count(done.prompt_tokens, 'prompt tok')} ·{' '}
          {count(done.completion_tokens, 'completion tok')} {done.error}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
