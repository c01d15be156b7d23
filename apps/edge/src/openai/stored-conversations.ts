// Stored conversations of /v1/responses over a ResponseStore: what `store: true` (the OpenAI default) keeps when a
// response ends, what `previous_response_id` prepends to a new request (the stored chain, oldest turn first, each
// turn's input items then its output items), and the stored response by id for GET, DELETE and input_items.
// Everything is per owner (the caller's principal id): another key's id is answered exactly like an unknown one.
// Instructions are not carried over (as OpenAI documents): a new turn sends its own.
import type { Logger } from '../logging.js';
import { randomId } from '../surface-kit/ids.js';
import { invalidRequest, OpenAIHttpError } from './openai-error.js';
import type { ResponsesInputItem, ResponsesRequestBody } from './request-schemas.js';
import type { ResponseStore } from './response-store.js';

type Item = Record<string, unknown>;

/** GET /v1/responses/{id}/input_items paging (OpenAI's list query). */
export interface InputItemsQuery {
  limit: number;
  order: 'asc' | 'desc';
  after: string | undefined;
}

export interface InputItemsPage {
  object: 'list';
  data: Item[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** Saves a response that ended (completed or incomplete); a failed or cancelled one is not kept. */
export type ResponseRecorder = (response: Item) => void;

const ITEM_ID_PREFIX: Record<string, string> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
};

export class StoredConversations {
  constructor(
    private readonly store: ResponseStore,
    private readonly logger: Logger,
  ) {}

  /**
   * The items of the stored chain ending at `previousId`, oldest turn first; 404 `previous_response_not_found`
   * when it, or a response it continued, is unknown, expired, deleted or another key's.
   */
  history(previousId: string, owner: string): ResponsesInputItem[] {
    const turns: Item[][] = [];
    const seen = new Set<string>();
    for (let id: string | undefined = previousId; id !== undefined && !seen.has(id);) {
      seen.add(id);
      const turn = this.store.get(owner, id);
      if (!turn) throw previousNotFound(id);
      turns.push([...turn.inputItems, ...outputItemsOf(turn.response)]);
      id = turn.previousResponseId;
    }
    return turns.reverse().flat();
  }

  /** What saves the response when it ends; undefined when the request asked for `store: false`. */
  recorderFor(
    request: ResponsesRequestBody,
    owner: string,
    createdAtMs: number,
  ): ResponseRecorder | undefined {
    if (request.store === false) return undefined;
    const inputItems = inputItemsOf(request.input);
    const previousResponseId = request.previous_response_id ?? undefined;
    return (response) => {
      if (response['status'] !== 'completed' && response['status'] !== 'incomplete') return;
      const id = String(response['id']);
      try {
        this.store.save({ id, owner, previousResponseId, inputItems, response, createdAt: createdAtMs });
      } catch (error) {
        // The answer is already made: it is served, only its continuation will not be found.
        this.logger.warn({ response: id, err: error }, 'storing a response failed');
      }
    };
  }

  /** The stored Response object, for its owner. */
  get(id: string, owner: string): Item | undefined {
    return this.store.get(owner, id)?.response;
  }

  /** Deletes the stored response of its owner; whether there was one. */
  delete(id: string, owner: string): boolean {
    return this.store.remove(owner, id);
  }

  /** One page of the response's own input items; undefined when there is no such stored response. */
  inputItems(id: string, owner: string, query: InputItemsQuery): InputItemsPage | undefined {
    const stored = this.store.get(owner, id);
    if (!stored) return undefined;
    const ordered = query.order === 'asc' ? stored.inputItems : [...stored.inputItems].reverse();
    let start = 0;
    if (query.after !== undefined) {
      const at = ordered.findIndex((item) => item['id'] === query.after);
      if (at === -1) throw invalidRequest(`No input item with id '${query.after}'`, 'after');
      start = at + 1;
    }
    const data = ordered.slice(start, start + query.limit);
    return {
      object: 'list',
      data,
      first_id: (data[0]?.['id'] as string | undefined) ?? null,
      last_id: (data[data.length - 1]?.['id'] as string | undefined) ?? null,
      has_more: start + query.limit < ordered.length,
    };
  }
}

/** The request's `input` as stored input items: a string is one user message; every item gets an id. */
function inputItemsOf(input: ResponsesRequestBody['input']): Item[] {
  const items: Item[] =
    typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : (input as Item[]);
  return items.map((item) => {
    const type = typeof item['type'] === 'string' ? item['type'] : 'message';
    const id =
      typeof item['id'] === 'string' ? item['id'] : `${ITEM_ID_PREFIX[type] ?? 'item'}_${randomId()}`;
    const stored: Item = { id, ...item, type };
    if (type === 'message' && typeof item['content'] === 'string') {
      const part = item['role'] === 'assistant' ? 'output_text' : 'input_text';
      stored['content'] = [{ type: part, text: item['content'] }];
    }
    return stored;
  });
}

function outputItemsOf(response: Item): Item[] {
  const output = response['output'];
  return Array.isArray(output) ? (output as Item[]) : [];
}

function previousNotFound(id: string): OpenAIHttpError {
  return new OpenAIHttpError(
    404,
    'invalid_request_error',
    'previous_response_not_found',
    `Previous response with id '${id}' not found.`,
    'previous_response_id',
  );
}

/** The request with the stored chain's items before its own input (unchanged when there are none). */
export function withHistory(body: ResponsesRequestBody, history: ResponsesInputItem[]): ResponsesRequestBody {
  if (history.length === 0) return body;
  const own: ResponsesInputItem[] =
    typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input;
  return { ...body, input: [...history, ...own] };
}
