// The order in which one pool queue (a model's, or an explicit route's) serves its waiters: fair share between
// principals (API keys) instead of one FIFO across them.
//
// Discipline (agent-contract/inner/edge-config-runtime-refresh.md, "Queue order"):
// - every principal with waiters is a flow; within a flow waiters are served in arrival order (FIFO);
// - `interactive` flows are served before `batch` flows: a batch waiter is served only while no interactive waiter
//   of the queue is (the pool skips a waiter only when it cannot be served, so a batch waiter still gets a slot an
//   interactive one cannot use);
// - within a class, flows share the queue by weight with stride scheduling (a start-time fair queue): each flow
//   has a virtual pass; the flow with the lowest pass is served next and its pass then advances by 1 / weight, so
//   a flow of weight 2 is served twice as often as one of weight 1 while both wait. Ties go to the flow whose
//   oldest waiter arrived first. A flow that starts waiting again begins at the class's current virtual time (the
//   pass of the waiter served last), so an idle principal cannot bank credit and a newcomer is served within one
//   round of every other flow, whatever their backlog.
//
// The queue holds no timers and knows nothing of capacity: the pool asks it for waiters in service order
// (`order()`, lazily, without changing anything) and tells it which one it served (`take`) or which one left
// (`remove`: abort, timeout, shutdown). Everything is O(flows) per step; flows are bounded by the keys.
import { LIMITS } from '@iop/config';

export type QueueClass = 'interactive' | 'batch';

/** Who a waiter belongs to and what share its key has (read from the key's config at enqueue time). */
export interface FlowSpec {
  /** The principal (key id); '' = anonymous callers, one flow together. */
  readonly principal: string;
  /** 1..1000; a refresh that changes a key's weight applies from its next waiter on. */
  readonly weight: number;
  readonly priority: QueueClass;
}

interface Entry<T> {
  readonly item: T;
  /** Arrival order (assigned by the pool, increasing). */
  readonly seq: number;
  readonly flow: Flow<T>;
}

interface Flow<T> {
  readonly principal: string;
  weight: number;
  priority: QueueClass;
  /** Virtual pass: the start tag of this flow's next waiter. */
  pass: number;
  readonly entries: Entry<T>[];
}

const CLASSES: readonly QueueClass[] = ['interactive', 'batch'];

export class FairQueue<T> {
  private readonly flows = new Map<string, Flow<T>>();
  private readonly entries = new Map<T, Entry<T>>();
  /** Per class: the pass of the waiter served last (monotonic). */
  private readonly virtualTime: Record<QueueClass, number> = { interactive: 0, batch: 0 };

  get length(): number {
    return this.entries.size;
  }

  /** Adds a waiter at the end of its principal's flow. */
  push(item: T, seq: number, spec: FlowSpec): void {
    if (this.entries.has(item)) throw new Error('FairQueue: the item is already queued');
    const weight = validWeight(spec.weight);
    let flow = this.flows.get(spec.principal);
    if (!flow) {
      flow = { principal: spec.principal, weight, priority: spec.priority, pass: 0, entries: [] };
      this.flows.set(spec.principal, flow);
    }
    if (flow.entries.length === 0) {
      flow.priority = spec.priority;
      // A flow that (re)starts waiting begins now in virtual time: no credit for having been idle.
      flow.pass = Math.max(flow.pass, this.virtualTime[flow.priority]);
    } else if (flow.priority !== spec.priority) {
      // The key's priority changed (config refresh) while it had waiters: the whole flow moves class.
      flow.priority = spec.priority;
      flow.pass = Math.max(flow.pass, this.virtualTime[flow.priority]);
    }
    flow.weight = weight;
    const entry: Entry<T> = { item, seq, flow };
    flow.entries.push(entry);
    this.entries.set(item, entry);
  }

  /** Takes a waiter out without charging its flow (it left: abort, timeout, shutdown); false when absent. */
  remove(item: T): boolean {
    const entry = this.entries.get(item);
    if (!entry) return false;
    this.detach(entry);
    return true;
  }

  /** Takes a waiter out because it was served: its flow's pass advances by 1 / weight. */
  take(item: T): void {
    const entry = this.entries.get(item);
    if (!entry) throw new Error('FairQueue: take of an item that is not queued');
    const flow = entry.flow;
    const priority = flow.priority;
    this.virtualTime[priority] = Math.max(this.virtualTime[priority], flow.pass);
    flow.pass += 1 / flow.weight;
    this.detach(entry);
  }

  /** The waiter `order()` yields first, without building the order (O(flows)); undefined when empty. */
  head(): T | undefined {
    for (const priority of CLASSES) {
      let best: Flow<T> | undefined;
      for (const flow of this.flows.values()) {
        if (flow.priority !== priority || flow.entries.length === 0) continue;
        if (!best || flowBefore(flow, best)) best = flow;
      }
      if (best) return best.entries[0].item;
    }
    return undefined;
  }

  /**
   * Waiters in the order the discipline would serve them if each were served in turn (interactive flows first,
   * then lowest pass, then oldest head; FIFO within a flow). Lazy and side-effect free: the pool stops at the
   * first waiter it can serve and calls `take` for it. Going past a flow's first waiter copies that flow's list
   * (the pool may change the queue while the generator is suspended), which only happens while waiters hold out
   * for their affine provider.
   */
  *order(): Generator<T> {
    for (const priority of CLASSES) {
      const cursors: Cursor<T>[] = [];
      for (const flow of this.flows.values()) {
        const first = flow.entries[0];
        if (flow.priority === priority && first !== undefined) {
          cursors.push({ flow, current: first, rest: undefined, pass: flow.pass });
        }
      }
      while (cursors.length > 0) {
        let best = 0;
        for (let index = 1; index < cursors.length; index += 1) {
          if (cursorBefore(cursors[index], cursors[best])) best = index;
        }
        const cursor = cursors[best];
        const entry = cursor.current;
        // Skip what left (or was served) since the generator started.
        if (this.entries.get(entry.item) === entry) yield entry.item;
        cursor.pass += 1 / cursor.flow.weight;
        if (cursor.rest === undefined) {
          const live = cursor.flow.entries;
          cursor.rest = live.slice(live.indexOf(entry) + 1);
        }
        const next = cursor.rest.shift();
        if (next === undefined) cursors.splice(best, 1);
        else cursor.current = next;
      }
    }
  }

  /** Every waiter, oldest first (shutdown, a removed model: each is rejected). */
  items(): T[] {
    return [...this.entries.values()].sort((a, b) => a.seq - b.seq).map((entry) => entry.item);
  }

  /** Number of principals with waiters (tests, diagnostics). */
  activeFlows(): number {
    let count = 0;
    for (const flow of this.flows.values()) if (flow.entries.length > 0) count += 1;
    return count;
  }

  private detach(entry: Entry<T>): void {
    const flow = entry.flow;
    const index = flow.entries.indexOf(entry);
    if (index >= 0) flow.entries.splice(index, 1);
    this.entries.delete(entry.item);
    // An idle flow is kept only while its pass is ahead of virtual time (it would start there anyway otherwise),
    // so the map holds at most the flows that recently used more than their share.
    if (flow.entries.length === 0 && flow.pass <= this.virtualTime[flow.priority]) {
      this.flows.delete(flow.principal);
    }
    if (this.entries.size === 0) this.pruneIdle();
  }

  /** Drops idle flows whose pass virtual time has caught up with. */
  private pruneIdle(): void {
    for (const [principal, flow] of this.flows) {
      if (flow.entries.length === 0 && flow.pass <= this.virtualTime[flow.priority]) {
        this.flows.delete(principal);
      }
    }
  }
}

/** A flow's position while `order()` simulates serving. */
interface Cursor<T> {
  readonly flow: Flow<T>;
  current: Entry<T>;
  /** The flow's later waiters, copied when the cursor first moves past `current`. */
  rest: Entry<T>[] | undefined;
  pass: number;
}

function cursorBefore<T>(a: Cursor<T>, b: Cursor<T>): boolean {
  if (a.pass !== b.pass) return a.pass < b.pass;
  return a.current.seq < b.current.seq;
}

function flowBefore<T>(a: Flow<T>, b: Flow<T>): boolean {
  if (a.pass !== b.pass) return a.pass < b.pass;
  return a.entries[0].seq < b.entries[0].seq;
}

/** Config and the wire bound weights already; anything else (a bug) counts as 1 rather than starving a flow. */
function validWeight(weight: number): number {
  return Number.isFinite(weight) && weight >= 1 && weight <= LIMITS.key_weight.max ? weight : 1;
}
