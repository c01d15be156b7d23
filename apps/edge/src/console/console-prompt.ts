// The console's readline front-end: shows the `edge> ` prompt, feeds lines to an OpsConsole one at a time and
// keeps asynchronous output (node events, background runs) from garbling the prompt line.
//
// On a terminal the typed line is echoed by readline itself. With piped input (scripts, tests) nothing echoes,
// so each line is printed after the prompt when it is processed: the output then reads exactly like an
// interactive transcript (`edge> /nodes` followed by its output).
//
// Ends on `/exit`, on end of input, on `stop()`, or on Ctrl-C at an idle prompt (Ctrl-C during a foreground run
// cancels the run instead). The caller owns the streams and the console's lifecycle.
import { createInterface } from 'node:readline';
import type { OpsConsole } from './ops-console.js';

export interface ConsolePromptOptions {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** A fixed prompt; default: the console's `promptText()` (`edge> `, or with the adapter/target it switched to). */
  prompt?: string;
  /** Whether input is an interactive terminal (default: the input stream's isTTY). */
  terminal?: boolean;
}

/** Owns the prompt: `writeLine` is the writer to give the OpsConsole, `run` drives it. */
export class ConsolePrompt {
  private readonly options: ConsolePromptOptions;
  private readonly terminal: boolean;
  private atPrompt = false;
  private promptShown: (() => void) | undefined;
  private wake: (() => void) | undefined;
  private stopped = false;

  constructor(options: ConsolePromptOptions) {
    this.options = options;
    this.terminal = options.terminal ?? (options.input as { isTTY?: boolean }).isTTY === true;
  }

  /** Writes one output line; on a terminal it redraws the prompt under asynchronous output. */
  readonly writeLine = (line: string): void => {
    if (this.terminal && this.atPrompt) {
      this.options.output.write(`\r\x1b[K${line}\n`);
      this.promptShown?.();
      return;
    }
    this.options.output.write(`${line}\n`);
  };

  /** Ends the prompt loop as if input had ended (process signals); the current line finishes first. */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  /** Runs the prompt loop until /exit, end of input, Ctrl-C at an idle prompt or stop(). */
  async run(ops: OpsConsole): Promise<void> {
    const { input, output } = this.options;
    const promptText = (): string => this.options.prompt ?? ops.promptText();
    const reader = createInterface({ input, output, terminal: this.terminal, prompt: promptText() });
    const lines: string[] = [];
    let ended = false;
    const notify = (): void => {
      const resolve = this.wake;
      this.wake = undefined;
      resolve?.();
    };
    reader.on('line', (line) => {
      lines.push(line);
      notify();
    });
    reader.on('close', () => {
      ended = true;
      notify();
    });
    reader.on('SIGINT', () => {
      if (!ops.interrupt()) {
        ended = true;
        lines.length = 0;
        notify();
      }
    });
    this.promptShown = () => reader.prompt(true);
    try {
      while (!this.stopped) {
        if (lines.length === 0 && !ended) {
          this.showPrompt(reader, promptText());
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
          continue;
        }
        const line = lines.shift();
        if (line === undefined) return;
        this.atPrompt = false;
        if (!this.terminal) output.write(`${promptText()}${line}\n`);
        const result = await ops.handleLine(line);
        if (result === 'exit') return;
      }
    } finally {
      this.atPrompt = false;
      this.promptShown = undefined;
      this.wake = undefined;
      reader.close();
    }
  }

  private showPrompt(reader: ReturnType<typeof createInterface>, text: string): void {
    this.atPrompt = true;
    reader.setPrompt(text);
    if (this.terminal) reader.prompt();
  }
}
