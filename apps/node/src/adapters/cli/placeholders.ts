// Placeholders in profile args and resume_args, so continuation flags are configuration, not code:
//   {prompt}                                   the prompt text (as one argument)
//   {session_id} {thread_id} {conversation_id} the CLI's own conversation id for this IOP session
//   {iop_session}                              the IOP logical session id
//   {workspace}                                the run's working directory
//   {run_id}                                   the IOP run id
// Unknown placeholders are left as written.
export interface PlaceholderValues {
  prompt: string;
  backendSessionId: string;
  iopSession: string;
  workspace: string;
  runId: string;
}

const PLACEHOLDER = /\{(prompt|session_id|thread_id|conversation_id|iop_session|workspace|run_id)\}/g;

export function expandArgs(template: readonly string[], values: PlaceholderValues): string[] {
  return template.map((argument) =>
    argument.replace(PLACEHOLDER, (_match, name: string) => {
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
    }),
  );
}

export function usesPlaceholder(template: readonly string[], name: string): boolean {
  return template.some((argument) => argument.includes(`{${name}}`));
}

/** True when the args name the CLI's conversation id in any spelling. */
export function usesBackendSessionId(template: readonly string[]): boolean {
  return ['session_id', 'thread_id', 'conversation_id'].some((name) => usesPlaceholder(template, name));
}
