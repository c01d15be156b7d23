// The per-label-set items of a hot-path metric (counter cells, histogram series), found by walking one Map per
// label value: no label-string key is built on a lookup. Items are created on first use and kept in creation
// order for export. Label sets are as bounded as the values callers pass.

/** Items keyed by a fixed-length list of label values. */
export class LabelTree<T> {
  #root = new Map<string, unknown>();
  #items: T[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    private readonly create: (labels: Record<string, string>) => T,
  ) {}

  /** The item of these label values (one per label name, in order), created on first use. */
  get(values: readonly string[]): T {
    if (values.length !== this.labelNames.length) {
      throw new RangeError(`expected ${this.labelNames.length} label values, got ${values.length}`);
    }
    let level = this.#root;
    for (let index = 0; index < values.length - 1; index += 1) {
      const key = values[index];
      let next = level.get(key) as Map<string, unknown> | undefined;
      if (!next) {
        next = new Map();
        level.set(key, next);
      }
      level = next;
    }
    const last = values[values.length - 1] ?? '';
    let item = level.get(last) as T | undefined;
    if (item === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, index) => {
        labels[name] = values[index];
      });
      item = this.create(labels);
      level.set(last, item);
      this.#items.push(item);
    }
    return item;
  }

  /** Every item, in creation order. */
  get items(): readonly T[] {
    return this.#items;
  }

  /** Forgets every item. */
  clear(): void {
    this.#root = new Map();
    this.#items = [];
  }
}
