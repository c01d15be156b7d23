// Turns the request's external `model` into where it runs. Order (agent-contract/outer/openai-compatible-api.md):
// a models[] entry (the provider pool, through the service's model catalogue) → an openai.model_routes entry →
// the top-level openai.adapter/target fallback.
// A fixed fallback target ignores the request's model; an empty one uses the model as target.
import type { ModelConfig, OpenAIConfig } from '@iop/config';
import type { ModelCatalog } from '../service/types.js';
import { modelNotFound } from './openai-error.js';

export type ResolvedRoute =
  | { kind: 'pool'; model: string; modelConfig: ModelConfig; workspaceRequired: false }
  | {
      kind: 'route' | 'fallback';
      model: string;
      adapter: string;
      target: string;
      node: string;
      workspaceRequired: boolean;
    };

export interface RouteResolver {
  resolve(model: string): ResolvedRoute;
  /** Model ids of the catalogue, in order: models[], model_routes[], openai.models, without duplicates. */
  catalogue(): string[];
}

export function createRouteResolver(openai: OpenAIConfig, models: ModelCatalog): RouteResolver {
  const routes = new Map(openai.model_routes.map((route) => [route.model, route]));
  return {
    resolve(model) {
      const modelConfig = models.get(model);
      if (modelConfig) return { kind: 'pool', model, modelConfig, workspaceRequired: false };
      const route = routes.get(model);
      if (route) {
        return {
          kind: 'route',
          model,
          adapter: route.adapter,
          target: route.target || model,
          node: route.node,
          workspaceRequired: route.workspace_required,
        };
      }
      if (openai.adapter) {
        // Fallback routes are uncatalogued by definition and never require a workspace.
        return {
          kind: 'fallback',
          model,
          adapter: openai.adapter,
          target: openai.target || model,
          node: '',
          workspaceRequired: false,
        };
      }
      throw modelNotFound(model);
    },
    catalogue() {
      return [...new Set([...models.ids(), ...routes.keys(), ...openai.models])];
    },
  };
}
