// Normalizes the three request dialects coding-agent CLIs speak (OpenAI chat completions, OpenAI Responses,
// Anthropic Messages) into one list of turns, and decides the fake model's answer from it:
//   - the last turn is a tool result          → text that quotes the tool output (`TOOL_OUTPUT: …`)
//   - the last user text contains RUN:<cmd>    → a call of the CLI's shell tool with that command
//   - otherwise                                → `<TOKEN>_OK`, TOKEN = the first iop_\w+ of the last user text
//     upper-cased (ECHO without one), plus `(history: A B)` naming tokens of earlier user turns, so a test can
//     see that a continued session really carried its history.
// A CLI that only stops when a completion tool is called (cline's submit_and_exit / attempt_completion) gets
// the text answer as that tool's argument.
export type TurnRole = 'system' | 'user' | 'assistant' | 'tool';

export interface Turn {
  role: TurnRole;
  text: string;
}

export interface ToolSpec {
  name: string;
  /** JSON schema of the arguments. */
  parameters: Record<string, unknown>;
}

export type ModelAction =
  | { kind: 'text'; text: string }
  | { kind: 'tool'; name: string; arguments: Record<string, unknown>; text?: string };

const SHELL_TOOLS = [
  'bash',
  'Bash',
  'exec_command',
  'shell',
  'run_commands',
  'execute_command',
  'run_command',
];
const COMPLETION_TOOLS = ['submit_and_exit', 'attempt_completion'];

export function decideAction(turns: Turn[], tools: ToolSpec[]): ModelAction {
  const last = turns[turns.length - 1];
  if (last?.role === 'tool') {
    // Tool results often start with metadata (exit code, timing): the end carries the command's output.
    const output = last.text.replace(/\s+/g, ' ').trim().slice(-200);
    return finish(`TOOL_OUTPUT: ${output}`, tools);
  }
  // Reminders a CLI injects as user turns (cline's "[SYSTEM] This run is not complete…") are not prompts.
  const userTurns = turns.filter((turn) => turn.role === 'user' && !turn.text.startsWith('[SYSTEM]'));
  const lastUser = userTurns[userTurns.length - 1]?.text ?? '';
  // The command ends at the line end or at a closing tag some CLIs wrap prompts in (<task>…</task>).
  const run = /RUN:([^<\n]+)/.exec(lastUser);
  const shell = tools.find((tool) => SHELL_TOOLS.includes(tool.name));
  if (run?.[1] && shell) {
    return { kind: 'tool', name: shell.name, arguments: shellArguments(shell, run[1].trim()) };
  }
  const token = firstToken(lastUser) ?? 'ECHO';
  const earlier = userTurns
    .slice(0, -1)
    .map((turn) => firstToken(turn.text))
    .filter((value): value is string => value !== undefined && value !== token);
  const history = [...new Set(earlier)];
  return finish(`${token}_OK${history.length > 0 ? ` (history: ${history.join(' ')})` : ''}`, tools);
}

function finish(text: string, tools: ToolSpec[]): ModelAction {
  const completion = tools.find((tool) => COMPLETION_TOOLS.includes(tool.name));
  if (!completion) return { kind: 'text', text };
  // Completion tools validate their summary (cline wants at least 10 characters).
  return {
    kind: 'tool',
    name: completion.name,
    arguments: fillStrings(completion, `Final answer: ${text}`),
    text,
  };
}

function firstToken(text: string): string | undefined {
  return /iop_\w+/i.exec(text)?.[0].toUpperCase();
}

function properties(tool: ToolSpec): Record<string, { type?: string }> {
  const value = tool.parameters.properties;
  return typeof value === 'object' && value !== null ? (value as Record<string, { type?: string }>) : {};
}

function required(tool: ToolSpec): string[] {
  const value = tool.parameters.required;
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** Arguments for a shell tool whatever its schema calls the command (command, cmd, commands; string or array). */
function shellArguments(tool: ToolSpec, command: string): Record<string, unknown> {
  const props = properties(tool);
  const args: Record<string, unknown> = {};
  for (const name of ['command', 'cmd', 'commands']) {
    const spec = props[name];
    if (!spec) continue;
    args[name] =
      spec.type === 'array' ? (name === 'commands' ? [command] : ['bash', '-lc', command]) : command;
    break;
  }
  if (Object.keys(args).length === 0) args.command = command;
  for (const name of required(tool)) {
    if (name in args) continue;
    const spec = props[name];
    if (spec?.type === 'boolean') args[name] = false;
    else if (spec?.type === 'number' || spec?.type === 'integer') args[name] = 10000;
    else if (spec?.type === 'array') args[name] = [];
    else args[name] = `run ${command}`;
  }
  return args;
}

function fillStrings(tool: ToolSpec, text: string): Record<string, unknown> {
  const props = properties(tool);
  const args: Record<string, unknown> = {};
  const names = required(tool).length > 0 ? required(tool) : Object.keys(props).slice(0, 1);
  for (const name of names) {
    const spec = props[name];
    if (spec?.type === 'boolean') args[name] = false;
    else if (spec?.type === 'array') args[name] = [];
    else args[name] = text;
  }
  if (names.length === 0) args.result = text;
  return args;
}

// ---- request dialects ----

function roleOf(value: unknown): string {
  return typeof value === 'string' ? value : 'user';
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((part) => {
      const object = asObject(part);
      if (!object) return '';
      if (typeof object.text === 'string')
        return object.text.startsWith('<system-reminder>') ? '' : object.text;
      if (object.type === 'tool_result') return contentText(object.content);
      return '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

export function chatTurns(body: Json): Turn[] {
  return asArray(body.messages).map((message) => {
    const object = asObject(message) ?? {};
    const role = roleOf(object.role);
    return { role: role === 'tool' ? 'tool' : (role as TurnRole), text: contentText(object.content) };
  });
}

export function chatTools(body: Json): ToolSpec[] {
  return asArray(body.tools).flatMap((tool) => {
    const fn = asObject(asObject(tool)?.function);
    return fn && typeof fn.name === 'string'
      ? [{ name: fn.name, parameters: asObject(fn.parameters) ?? {} }]
      : [];
  });
}

export function responsesTurns(body: Json): Turn[] {
  const turns: Turn[] = [];
  if (typeof body.instructions === 'string') turns.push({ role: 'system', text: body.instructions });
  if (typeof body.input === 'string') return [...turns, { role: 'user', text: body.input }];
  for (const item of asArray(body.input)) {
    const object = asObject(item) ?? {};
    const type = object.type ?? 'message';
    if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      const output = object.output;
      turns.push({ role: 'tool', text: typeof output === 'string' ? output : JSON.stringify(output) });
    } else if (type === 'function_call') {
      turns.push({ role: 'assistant', text: '' });
    } else if (type === 'message') {
      const role = roleOf(object.role);
      // codex sends its environment context as a user message: not a prompt.
      const text = contentText(object.content);
      if (role === 'user' && text.startsWith('<environment_context>')) continue;
      if (role === 'user' && text.startsWith('<user_instructions>')) continue;
      turns.push({ role: role === 'developer' ? 'system' : (role as TurnRole), text });
    }
  }
  return turns;
}

export function responsesTools(body: Json): ToolSpec[] {
  return asArray(body.tools).flatMap((tool) => {
    const object = asObject(tool);
    if (!object || typeof object.name !== 'string') return [];
    return [{ name: object.name, parameters: asObject(object.parameters) ?? {} }];
  });
}

export function anthropicTurns(body: Json): Turn[] {
  return asArray(body.messages).map((message) => {
    const object = asObject(message) ?? {};
    const blocks = asArray(object.content);
    const isToolResult =
      blocks.length > 0 && blocks.every((block) => asObject(block)?.type === 'tool_result');
    return {
      role: isToolResult ? 'tool' : (roleOf(object.role) as TurnRole),
      text: contentText(object.content),
    };
  });
}

export function anthropicTools(body: Json): ToolSpec[] {
  return asArray(body.tools).flatMap((tool) => {
    const object = asObject(tool);
    if (!object || typeof object.name !== 'string') return [];
    return [{ name: object.name, parameters: asObject(object.input_schema) ?? {} }];
  });
}
