// How a chunk stream (chat.completion.chunk, streamed text_completion) ends: the usage chunk when the request
// asked for it (`stream_options.include_usage`), then `data: [DONE]`; or, when the run fails, an HTTP error if
// nothing was written yet and an SSE error object if output already started.
import { runFailed } from '../surface-kit/surface-error.js';
import { errorDataObject } from './openai-error.js';
import type { SseSink } from '../surface-kit/sse-sink.js';

export interface ChunkStreamHead {
  id: string;
  /** `chat.completion.chunk` or `text_completion`. */
  object: string;
  /** Unix seconds. */
  created: number;
  model: string;
  includeUsage: boolean;
}

/** Writes the usage chunk (when asked for) and `data: [DONE]`. */
export async function endChunkStream(
  sink: SseSink,
  head: ChunkStreamHead,
  usage: Record<string, unknown>,
): Promise<void> {
  if (head.includeUsage) {
    const body = {
      id: head.id,
      object: head.object,
      created: head.created,
      model: head.model,
      choices: [],
      usage,
    };
    await sink.write(`data: ${JSON.stringify(body)}\n\n`);
  }
  await sink.write('data: [DONE]\n\n');
}

/** Throws the run's failure before anything was written; after that, writes it as an SSE error object. */
export async function failChunkStream(sink: SseSink, code: string, message: string): Promise<void> {
  if (!sink.started) throw runFailed(code, message);
  await sink.write(`data: ${JSON.stringify(errorDataObject(runFailed(code, message)))}\n\n`);
}
