// Hot-path counting without prom-client's per-call cost (label validation, a label-string hash and a keyed
// lookup on every inc): a caller keeps a cell per label set, cached on first use, and `inc` adds to a plain
// number. The counter's collect() — run by prom-client on every scrape and every get() — moves the pending
// counts into the counter, so what is exported is unchanged. Label sets are as bounded as the counter's own
// (callers pass the same bounded label values they would pass to `inc`).
import { Counter, type Registry } from 'prom-client';

export interface CounterCell {
  /** Adds `value` (default 1) to this label set's count. */
  inc(value?: number): void;
}

class Cell implements CounterCell {
  pending = 0;
  constructor(readonly labels: Record<string, string>) {}

  inc(value = 1): void {
    this.pending += value;
  }
}

/** The cells of one counter, looked up by label values in the counter's `labelNames` order. */
export class CounterCells<L extends string> {
  private readonly root = new Map<string, unknown>();
  private readonly cells: Cell[] = [];
  private counter: Counter<L> | undefined;

  constructor(private readonly labelNames: readonly L[]) {}

  /** Binds the counter the cells flush into; call from the counter's construction (its `collect`). */
  bind(counter: Counter<L>): void {
    this.counter = counter;
  }

  /** The cell of these label values (one per label name, in order). */
  cell(...values: string[]): CounterCell {
    if (values.length !== this.labelNames.length) {
      throw new RangeError(`expected ${this.labelNames.length} label values, got ${values.length}`);
    }
    let level = this.root;
    for (let index = 0; index < values.length - 1; index += 1) {
      const key = values[index];
      let next = level.get(key) as Map<string, unknown> | undefined;
      if (!next) {
        next = new Map();
        level.set(key, next);
      }
      level = next;
    }
    const last = values[values.length - 1];
    let cell = level.get(last) as Cell | undefined;
    if (!cell) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, index) => {
        labels[name] = values[index];
      });
      cell = new Cell(labels);
      level.set(last, cell);
      this.cells.push(cell);
    }
    return cell;
  }

  /** Moves every pending count into the counter (prom-client calls this through the counter's collect()). */
  flush(): void {
    const counter = this.counter;
    if (!counter) return;
    for (const cell of this.cells) {
      if (cell.pending === 0) continue;
      const value = cell.pending;
      cell.pending = 0;
      counter.inc(cell.labels as Partial<Record<L, string>>, value);
    }
  }
}

/** A prom-client counter whose hot-path increments go through cells (see the module comment). */
export function cellCounter<L extends string>(config: {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}): { counter: Counter<L>; cells: CounterCells<L> } {
  const cells = new CounterCells<L>(config.labelNames);
  const counter: Counter<L> = new Counter<L>({
    ...config,
    labelNames: [...config.labelNames],
    collect() {
      cells.flush();
    },
  });
  cells.bind(counter);
  return { counter, cells };
}
