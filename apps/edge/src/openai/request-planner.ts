// What every OpenAI run endpoint does between a validated body and the run the service takes (its RunSpec, built
// by the endpoint's builder): resolve the model for the caller's key, plan the body's fields for the route's
// backends, and check remote images and the workspace a CLI agent needs. Who is asking is the kit's withCaller.
import { DEFAULTS } from '@iop/config';
import { allowsModel } from '../governance/principal.js';
import type { RequestContext } from '../surface-kit/request-context.js';
import type { RunSpec } from '../service/types.js';
import type { SurfaceRun } from '../surface-kit/surface-run.js';
import type { ResolvedRoute, RouteResolver } from '../surface-kit/route-resolver.js';
import { modelNotFound } from '../surface-kit/surface-error.js';
import { invalidRequest } from './openai-error.js';
import { planRequestFields, type RequestEndpoint } from './request-fields.js';
import { checkImageUrlCount, checkImageUrls, hasImageUrls } from './request-inputs.js';

export interface RequestPlanner {
  /** The catalogue as the request's key sees it: models outside its allow-list do not exist for it. */
  visibleModels(context: Caller): string[];
  /** Resolves the model for the request's key (404 outside its allow-list, as if it did not exist). */
  resolveFor(context: Caller, model: string): ResolvedRoute;
  /**
   * No silent drop: every field of the body is taken, forwarded or refused for the route's backends (dropped
   * fields are removed from the body before the spec is built from it). Returns what the run must carry.
   */
  planFields(endpoint: RequestEndpoint, body: object, route: ResolvedRoute): PlannedFields;
  /**
   * Remote images: at most the model's `image_limits.max_urls` (400), refused for backends that cannot take
   * them (400), fetched by the node when the model allows, within its `image_limits.max_total_bytes`.
   */
  withImageUrls(run: SurfaceRun, route: ResolvedRoute): SurfaceRun;
}

/** Who asks: a request's context, or a run placed again after a restart (its principal re-resolved). */
type Caller = Pick<RequestContext, 'principal'>;

/** What planning a body's fields gives its run: forwarded fields (the spec's) and dropped ones (the caller's). */
export interface PlannedFields {
  extraBodyJson: string | undefined;
  droppedParams: string[] | undefined;
}

/** Puts the planned fields where they belong: the forwarded ones in the spec, the dropped ones with the caller. */
export function withFields(run: SurfaceRun, fields: PlannedFields): SurfaceRun {
  if (fields.extraBodyJson !== undefined) run.spec.extraBodyJson = fields.extraBodyJson;
  if (fields.droppedParams !== undefined) run.caller.droppedParams = fields.droppedParams;
  return run;
}

export function createRequestPlanner(resolver: RouteResolver): RequestPlanner {
  return {
    visibleModels(context) {
      const principal = context.principal;
      const catalogue = resolver.catalogue();
      return principal ? catalogue.filter((model) => allowsModel(principal, model)) : catalogue;
    },
    resolveFor(context, model) {
      const principal = context.principal;
      if (principal && !allowsModel(principal, model)) throw modelNotFound(model);
      return resolver.resolve(model);
    },
    planFields(endpoint, body, route) {
      const plan = planRequestFields(body as Record<string, unknown>, {
        endpoint,
        model: route.model,
        backends: resolver.backends(route),
        dropUnsupported: route.kind === 'pool' && route.modelConfig.drop_unsupported,
      });
      return {
        extraBodyJson: plan.extraBody ? JSON.stringify(plan.extraBody) : undefined,
        droppedParams: plan.dropped.length > 0 ? plan.dropped : undefined,
      };
    },
    withImageUrls(run, route) {
      const spec = run.spec;
      if (!hasImageUrls(spec)) return run;
      const limits =
        route.kind === 'pool'
          ? route.modelConfig.image_limits
          : { max_urls: DEFAULTS.image_max_urls, max_total_bytes: DEFAULTS.image_max_total_bytes };
      checkImageUrlCount(route.model, spec, limits.max_urls);
      const fetchEnabled = route.kind === 'pool' && route.modelConfig.fetch_image_urls;
      if (checkImageUrls(route.model, resolver.backends(route), fetchEnabled)) {
        spec.fetchImageUrls = true;
        spec.imageFetchMaxTotalBytes = limits.max_total_bytes;
      }
      return run;
    },
  };
}

/** The conversation an OpenAI body names for affinity: its `user` field (withCaller prefers `x-session-id`). */
export function bodyUser(requestBody: unknown): unknown {
  return typeof requestBody === 'object' && requestBody !== null
    ? (requestBody as Record<string, unknown>)['user']
    : undefined;
}

export function requireWorkspace(route: ResolvedRoute, spec: RunSpec): void {
  if (route.workspaceRequired && !spec.workspace) {
    throw invalidRequest(
      `The model '${route.model}' runs a CLI agent and requires 'metadata.workspace'`,
      'metadata.workspace',
      'workspace_required',
    );
  }
}

/** Refuses a CLI agent for an endpoint that is not a conversation (`what`: "complete a raw prompt"). */
export function refuseCliAgent(resolver: RouteResolver, route: ResolvedRoute, what: string): void {
  if (resolver.backends(route).includes('cli')) {
    throw invalidRequest(
      `The model '${route.model}' runs a CLI agent, which cannot ${what}`,
      'model',
      'unsupported_model',
    );
  }
}
