// Hot-path counting without prom-client's per-call cost (label validation, a label-string hash and a keyed
// lookup on every inc): a caller keeps a cell per label set, cached on first use, and `inc` adds to a plain
// number. The counter's collect() — run by prom-client on every scrape and every get() — moves the pending
// counts into the counter, so what is exported is unchanged. Label sets are as bounded as the counter's own
// (callers pass the same bounded label values they would pass to `inc`).
import { Counter, type Registry } from 'prom-client';
import { LabelTree } from './label-tree.js';

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
  private readonly cells: LabelTree<Cell>;
  private counter: Counter<L> | undefined;

  constructor(labelNames: readonly L[]) {
    this.cells = new LabelTree(labelNames, (labels) => new Cell(labels));
  }

  /** Binds the counter the cells flush into; call from the counter's construction (its `collect`). */
  bind(counter: Counter<L>): void {
    this.counter = counter;
  }

  /** The cell of these label values (one per label name, in order). */
  cell(...values: string[]): CounterCell {
    return this.cells.get(values);
  }

  /** Moves every pending count into the counter (prom-client calls this through the counter's collect()). */
  flush(): void {
    const counter = this.counter;
    if (!counter) return;
    for (const cell of this.cells.items) {
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
