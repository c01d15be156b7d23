// Turns the request's external `model` into where it runs. Order (agent-contract/outer/openai-compatible-api.md):
// a models[] entry (the provider pool, through the service's model catalogue) → an openai.model_routes entry →
// the top-level openai.adapter/target fallback.
// A fixed fallback target ignores the request's model; an empty one uses the model as target.
import {
  ADAPTER_TYPES,
  type AdapterType,
  type ModelConfig,
  type NodeConfig,
  type OpenAIConfig,
} from '@iop/config';
import type { ModelCatalog } from '../service/types.js';
import { modelNotFound } from './surface-error.js';

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
  /**
   * The adapter types a run of the route may reach: a pool model's enabled providers; for an explicit route, the
   * adapter instances its `adapter` names on its node (any node when none is named). Empty = unknown.
   */
  backends(route: ResolvedRoute): AdapterType[];
  /** Model ids of the catalogue, in order: models[], model_routes[], openai.models, without duplicates. */
  catalogue(): string[];
}

export function createRouteResolver(
  openai: OpenAIConfig,
  models: ModelCatalog,
  nodes: readonly NodeConfig[] = [],
): RouteResolver {
  const routes = new Map(openai.model_routes.map((route) => [route.model, route]));
  const routeBackends = new Map<string, AdapterType[]>();
  return {
    backends(route) {
      if (route.kind === 'pool') return models.backends(route.model);
      const key = `${route.node}\u0000${route.adapter}`;
      let types = routeBackends.get(key);
      if (!types) {
        types = adapterTypes(nodes, route.node, route.adapter);
        routeBackends.set(key, types);
      }
      return types;
    },
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

/** Types of the instances named `adapter` (or, for a bare type name, that type) on `node` ('' = every node). */
function adapterTypes(nodes: readonly NodeConfig[], node: string, adapter: string): AdapterType[] {
  const types = new Set<AdapterType>();
  for (const entry of nodes) {
    if (node !== '' && entry.id !== node && entry.alias !== node) continue;
    for (const instance of entry.adapters.instances) if (instance.name === adapter) types.add(instance.type);
  }
  if (types.size === 0 && (ADAPTER_TYPES as readonly string[]).includes(adapter))
    types.add(adapter as AdapterType);
  return [...types];
}
