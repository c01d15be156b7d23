// Placeholders in profile args and resume_args, so continuation flags are configuration, not code:
//   {prompt}                                   the prompt text (as one argument)
//   {session_id} {thread_id} {conversation_id} the CLI's own conversation id for this IOP session
//   {iop_session}                              the IOP logical session id
//   {workspace}                                the run's working directory
//   {run_id}                                   the IOP run id
// Unknown placeholders are left as written.
//
// Caller text must never become an option of the CLI: an argument that is exactly `{prompt}` is always preceded
// by a `--` end-of-options marker (inserted when the template has none before it), so a prompt such as
// `--add-dir /` or `-c sandbox_mode=...` reaches the CLI as text. `{iop_session}` (from an A2A contextId or a
// client's session id) is accepted only in the form SESSION_ID_PATTERN describes.
import { CliAdapterError } from './errors.js';

export interface PlaceholderValues {
  prompt: string;
  backendSessionId: string;
  iopSession: string;
  workspace: string;
  runId: string;
}

/** What an IOP session id substituted into argv may look like. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

const END_OF_OPTIONS = '--';
const PLACEHOLDER = /\{(prompt|session_id|thread_id|conversation_id|iop_session|workspace|run_id)\}/g;

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

function substitute(name: string, values: PlaceholderValues): string {
  switch (name) {
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
