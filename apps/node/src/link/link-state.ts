// The link's explicit state machine. `connecting` is the first dial and handshake; after a first registration a
// lost connection moves to `reconnecting` (which covers the retry attempts) and back to `registered` on success;
// every ending goes through `closing` (sessions stopped, Goodbye sent) to `closed`. Anything else throws.
import { LinkError } from './link-error.js';

export type LinkState = 'connecting' | 'registered' | 'reconnecting' | 'closing' | 'closed';

const ALLOWED: Record<LinkState, readonly LinkState[]> = {
  connecting: ['registered', 'closing'],
  registered: ['reconnecting', 'closing'],
  reconnecting: ['registered', 'closing'],
  closing: ['closed'],
  closed: [],
};

export type LinkStateListener = (next: LinkState, previous: LinkState) => void;

export class LinkStateMachine {
  #state: LinkState = 'connecting';
  readonly #listeners: LinkStateListener[] = [];

  get state(): LinkState {
    return this.#state;
  }

  canTransition(next: LinkState): boolean {
    return ALLOWED[this.#state].includes(next);
  }

  /** Moves to `next` or throws LinkError illegal_transition. */
  transition(next: LinkState): void {
    if (!this.canTransition(next)) {
      throw new LinkError('illegal_transition', `illegal link transition ${this.#state} → ${next}`);
    }
    const previous = this.#state;
    this.#state = next;
    for (const listener of this.#listeners) listener(next, previous);
  }

  onChange(listener: LinkStateListener): void {
    this.#listeners.push(listener);
  }
}
