// A run's share of a key's limits taken somewhere else (cluster mode: on the key's home edge). Its own module so
// the principal that carries it and the governor that finishes it both import it, not each other.

export interface LimitLease {
  /** Returns the slot and corrects tpm and the budget from the estimate to `actualTokens`. Idempotent. */
  finish(actualTokens: number): void;
}
