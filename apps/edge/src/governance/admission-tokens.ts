// What a run reserves at admission against its key's `tpm` and token budget: the prompt's estimate plus the most
// it may answer. A reservation only of the prompt let N concurrent requests pass a nearly spent budget and
// overshoot it by N answers; with the answer reserved too, later requests see what the running ones may still
// spend, so a budget or tpm is passed by at most the one request admitted while something was left. The
// governor settles each reservation to what the run used (DeliveredUsage) when it ends.
import type { ChatMessage } from '@iop/wire';
import { estimateTokens } from './estimate-tokens.js';

export interface AnswerLimits {
  /** The request's `max_tokens`, when it named one. */
  requested: number | undefined;
  /** The model's `default_max_tokens` / `min_max_tokens` (models[] routes only). */
  modelDefault: number | null | undefined;
  modelMinimum: number | null | undefined;
  /** `usage.reserve_max_tokens`: what to reserve when neither the request nor the model says. */
  fallback: number;
}

/** The answer tokens a run may use, as the generation policy will send them (see generation-policy.ts). */
export function answerTokens(limits: AnswerLimits): number {
  let tokens = limits.requested ?? limits.modelDefault ?? undefined;
  if (tokens !== undefined && limits.modelMinimum != null && tokens < limits.modelMinimum) {
    tokens = limits.modelMinimum;
  }
  return Math.max(0, tokens ?? limits.fallback);
}

/** Prompt estimate + the answer's limit: what admission reserves for a run. */
export function admissionTokens(messages: readonly ChatMessage[], limits: AnswerLimits): number {
  return estimateTokens(messages) + answerTokens(limits);
}
