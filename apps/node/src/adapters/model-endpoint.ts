// What an adapter asks of the node for a run that carries RunRequest.model_access (issue 42): a model endpoint
// for the agent it runs, on the node's loopback, for that run's lifetime. The adapter gets back the values of the
// `{model_base_url}`, `{anthropic_base_url}`, `{model_api_key}` and `{model}` placeholders and a close handle; how
// the endpoint's connections reach the edge (model-endpoint/) is none of its business.

/** The placeholder values of one run's model endpoint. */
export interface ModelEndpointValues {
  /** OpenAI-style base URL, ending in `/v1` (`http://127.0.0.1:<port>/v1`). */
  readonly modelBaseUrl: string;
  /** Anthropic-style base URL, without `/v1` (`http://127.0.0.1:<port>`). */
  readonly anthropicBaseUrl: string;
  /** The run's secret (Bearer / x-api-key). */
  readonly apiKey: string;
  /** The models[] id to call. */
  readonly model: string;
}

export interface ModelEndpoint {
  readonly values: ModelEndpointValues;
  /** Stops listening and ends every open call (reason `parent_ended`). Idempotent. */
  close(): void;
}

export interface ModelEndpointRequest {
  runId: string;
  apiKey: string;
  model: string;
}

export interface ModelEndpoints {
  /** Starts listening for `request.runId`; rejects when no endpoint can be offered (no link, no port). */
  open(request: ModelEndpointRequest): Promise<ModelEndpoint>;
}
