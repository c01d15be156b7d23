// The models[] generation policy, applied by the service to a model-routed run after its queue wait (and only there:
// explicit routes have no model entry).
import type { GenerationParams } from '@iop/wire';
import type { ModelConfig } from '@iop/config';

/** The generation fields of a models[] entry. */
type GenerationPolicy = Pick<
  ModelConfig,
  'default_max_tokens' | 'min_max_tokens' | 'default_thinking_token_budget'
>;

/**
 * `default_max_tokens` when the request names none; `min_max_tokens` raises a smaller request;
 * `default_thinking_token_budget` when reasoning is requested without a budget.
 */
export function applyGenerationPolicy(
  params: GenerationParams,
  policy: GenerationPolicy,
  reasoningRequested: boolean,
): GenerationParams {
  let maxTokens = params.maxTokens;
  if (maxTokens === undefined && policy.default_max_tokens !== null) maxTokens = policy.default_max_tokens;
  if (maxTokens !== undefined && policy.min_max_tokens !== null && maxTokens < policy.min_max_tokens) {
    maxTokens = policy.min_max_tokens;
  }
  let thinkingBudget = params.thinkingBudget;
  if (reasoningRequested && thinkingBudget === undefined && policy.default_thinking_token_budget !== null) {
    thinkingBudget = policy.default_thinking_token_budget;
  }
  return { ...params, maxTokens, thinkingBudget };
}
