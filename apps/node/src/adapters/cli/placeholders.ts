// Placeholders in profile args and resume_args, so continuation flags are configuration, not code:
//   {prompt}                                   the prompt text (as one argument)
//   {session_id} {thread_id} {conversation_id} the CLI's own conversation id for this IOP session
//   {iop_session}                              the IOP logical session id
//   {workspace}                                the run's working directory
//   {run_id}                                   the IOP run id
//   {model_base_url} {anthropic_base_url}      a `fabric_model` run's loopback model endpoint (OpenAI style, ending
//   {model_api_key} {model}                    in /v1; Anthropic style), its secret and the models[] id (issue 42);
//                                              also filled in `env` values (expandEnv)
// Unknown placeholders, and the model ones in a run without a model endpoint, are left as written.
//
// Caller text must never become an option of the CLI: an argument that is exactly `{prompt}` is always preceded
// by a `--` end-of-options marker (inserted when the template has none before it), so a prompt such as
// `--add-dir /` or `-c sandbox_mode=...` reaches the CLI as text. `{iop_session}` (from an A2A contextId or a
// client's session id) is accepted only in the form SESSION_ID_PATTERN describes.
import type { ModelEndpointValues } from '../model-endpoint.js';
import { CliAdapterError } from './errors.js';

export interface PlaceholderValues {
  prompt: string;
  backendSessionId: string;
  iopSession: string;
  workspace: string;
  runId: string;
  /** The run's model endpoint (RunRequest.model_access); absent = the model placeholders stay as written. */
  model?: ModelEndpointValues | undefined;
}

/** What an IOP session id substituted into argv may look like. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

const END_OF_OPTIONS = '--';
const PLACEHOLDER =
  /\{(prompt|session_id|thread_id|conversation_id|iop_session|workspace|run_id|model_base_url|anthropic_base_url|model_api_key|model)\}/g;
const MODEL_PLACEHOLDER = /\{(model_base_url|anthropic_base_url|model_api_key|model)\}/g;

export function expandArgs(template: readonly string[], values: PlaceholderValues): string[] {
  if (usesPlaceholder(template, 'iop_session') && !SESSION_ID_PATTERN.test(values.iopSession)) {
    throw new CliAdapterError(
      'invalid_session_id',
      `session id ${JSON.stringify(values.iopSession.slice(0, 160))} cannot be passed to the CLI: use 1-128 letters, digits, '.', '_' or '-'`,
    );
  }
  const expanded: string[] = [];
  let optionsEnded = false;
  for (const argument of template) {
    if (argument === END_OF_OPTIONS) optionsEnded = true;
    if (argument === '{prompt}' && !optionsEnded) {
      expanded.push(END_OF_OPTIONS);
      optionsEnded = true;
    }
    expanded.push(argument.replace(PLACEHOLDER, (_match, name: string) => substitute(name, values)));
  }
  return expanded;
}

/** A profile's `env` with the model placeholders filled (the only placeholders env values take). */
export function expandEnv(
  env: Readonly<Record<string, string>>,
  model: ModelEndpointValues | undefined,
): Record<string, string> {
  if (!model) return { ...env };
  const expanded: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    expanded[key] = value.replace(MODEL_PLACEHOLDER, (_match, name: string) => modelValue(name, model));
  }
  return expanded;
}

function modelValue(name: string, model: ModelEndpointValues): string {
  switch (name) {
    case 'model_base_url':
      return model.modelBaseUrl;
    case 'anthropic_base_url':
      return model.anthropicBaseUrl;
    case 'model_api_key':
      return model.apiKey;
    default:
      return model.model;
  }
}

function substitute(name: string, values: PlaceholderValues): string {
  switch (name) {
    case 'model_base_url':
    case 'anthropic_base_url':
    case 'model_api_key':
    case 'model':
      return values.model ? modelValue(name, values.model) : `{${name}}`;
    case 'prompt':
      return values.prompt;
    case 'session_id':
    case 'thread_id':
    case 'conversation_id':
      return values.backendSessionId;
    case 'iop_session':
      return values.iopSession;
    case 'workspace':
      return values.workspace;
    default:
      return values.runId;
  }
}

export function usesPlaceholder(template: readonly string[], name: string): boolean {
  return template.some((argument) => argument.includes(`{${name}}`));
}

/** True when the args name the CLI's conversation id in any spelling. */
export function usesBackendSessionId(template: readonly string[]): boolean {
  return ['session_id', 'thread_id', 'conversation_id'].some((name) => usesPlaceholder(template, name));
}
