// Stored conversations of /v1/responses (`store: true`, the OpenAI default): per response, the input items the
// request sent (ids added), the final Response object (its output items), the response it continued, its owner
// and when it was made. A record is written once, when its response ends (completed or incomplete) — never per
// streamed token — and read by `previous_response_id`, GET /v1/responses/{id}, its input_items and DELETE.
//
// Bounds, kept by every implementation: a record older than `ttlMs` is gone (get() answers undefined and a later
// save() removes it), and each owner keeps at most `maxPerKey` records, the oldest evicted first. The edge's store
// is SQLite in `<edge.data_dir>/responses.db` (sqlite-response-store.ts); without one, memory-response-store.ts.

/** One stored response. */
export interface StoredResponse {
  id: string;
  /** The owner's principal id; '' when the listener has no API keys. */
  owner: string;
  /** The response this one continued (`previous_response_id`); undefined for a first turn. */
  previousResponseId: string | undefined;
  /** The request's own input items, in order, each with an `id`. */
  inputItems: Record<string, unknown>[];
  /** The final Response object; its `output` holds the turn's output items. */
  response: Record<string, unknown>;
  /** Unix milliseconds. */
  createdAt: number;
}

/** How long and how many records a store keeps (`openai.responses`). */
export interface ResponseStoreBounds {
  ttlMs: number;
  maxPerKey: number;
}

/** Where stored responses are kept. Synchronous: a save is done before the client sees the end of its response. */
export interface ResponseStore {
  /** Inserts (or replaces) the record, then drops expired records and the owner's oldest beyond the cap. */
  save(record: StoredResponse): void;
  /** The owner's record of `id`; undefined when absent, expired or another owner's. */
  get(owner: string, id: string): StoredResponse | undefined;
  /** Deletes the owner's record of `id`; whether there was one. */
  remove(owner: string, id: string): boolean;
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;

/** The bounds of `openai.responses` in milliseconds and records. */
export function responseStoreBounds(config: {
  store_ttl_days: number;
  store_max_per_key: number;
}): ResponseStoreBounds {
  return { ttlMs: config.store_ttl_days * DAY_MS, maxPerKey: config.store_max_per_key };
}
