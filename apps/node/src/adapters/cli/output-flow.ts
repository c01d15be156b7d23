// Flow control between a child's output and the run that consumes it: output lines wait in a queue, and when the
// queue holds more than `highWater` items the child's output is paused (its pipe fills, so it blocks in write)
// until the run has taken the queue down to `lowWater`. The node's memory per run stays bounded however fast a CLI
// prints and however slowly the edge link drains the run's events.
export interface PausableOutput {
  pause(): void;
  resume(): void;
}

export const OUTPUT_HIGH_WATER_LINES = 512;
export const OUTPUT_LOW_WATER_LINES = 128;

export class OutputFlow {
  private paused = false;

  constructor(
    private readonly output: PausableOutput,
    private readonly queue: { readonly length: number },
    private readonly highWater = OUTPUT_HIGH_WATER_LINES,
    private readonly lowWater = OUTPUT_LOW_WATER_LINES,
  ) {}

  get isPaused(): boolean {
    return this.paused;
  }

  /** Call after pushing output into the queue. */
  afterPush(): void {
    if (!this.paused && this.queue.length > this.highWater) {
      this.paused = true;
      this.output.pause();
    }
  }

  /** Call after taking from the queue. */
  afterTake(): void {
    if (this.paused && this.queue.length <= this.lowWater) {
      this.paused = false;
      this.output.resume();
    }
  }
}
