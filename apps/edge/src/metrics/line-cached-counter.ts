// A Prometheus counter for label sets that grow with the fleet (one series per node: 10,000s on a large edge).
// prom-client renders every series of a metric on every scrape (~10 µs each: label objects, hashing, escaping), so
// at 10,000 nodes a scrape blocked the event loop for ~100 ms for figures that move only when a node connects or
// disconnects. Here each series keeps its exposition line, rebuilt only when its value moves, and the page is the
// lines joined, itself kept until a line changes. Same text format as prom-client's (`# HELP`, `# TYPE`, one
// `name{label="value",...} value` line per series in first-seen order; label values escaped).

interface Series {
  /** `{label="value",...}`, escaped once. */
  readonly labels: string;
  value: number;
  line: string;
}

export interface LineCachedCounterOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
}

export class LineCachedCounter<L extends string> {
  readonly name: string;
  readonly #header: string;
  readonly #labelNames: readonly L[];
  readonly #series = new Map<string, Series>();
  #page: string | undefined;

  constructor(options: LineCachedCounterOptions<L>) {
    this.name = options.name;
    this.#labelNames = options.labelNames;
    this.#header = `# HELP ${options.name} ${escapeHelp(options.help)}\n# TYPE ${options.name} counter\n`;
  }

  inc(labels: Record<L, string>, value = 1): void {
    if (!(value >= 0)) throw new RangeError(`${this.name}: a counter only goes up (got ${value})`);
    const values = this.#labelNames.map((name) => labels[name]);
    const key = values.join('\u0000');
    let series = this.#series.get(key);
    if (!series) {
      const text = this.#labelNames.map((name, index) => `${name}="${escapeLabel(values[index] ?? '')}"`);
      series = { labels: `{${text.join(',')}}`, value: 0, line: '' };
      this.#series.set(key, series);
    }
    series.value += value;
    series.line = `${this.name}${series.labels} ${series.value}`;
    this.#page = undefined;
  }

  /** The value of one series (0 when it was never incremented). */
  get(labels: Record<L, string>): number {
    return this.#series.get(this.#labelNames.map((name) => labels[name]).join('\u0000'))?.value ?? 0;
  }

  /** The metric in the text exposition format, ending with a newline. */
  render(): string {
    if (this.#page === undefined) {
      let lines = '';
      for (const series of this.#series.values()) lines += `${series.line}\n`;
      this.#page = this.#header + lines;
    }
    return this.#page;
  }
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
