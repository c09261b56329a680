import type { Exchange } from '../../evidence/exchange.js';

const minuteMs = 60_000;

export interface StepWindowState {
  head: number | null;
  counts: number[];
  total: number;
}

/**
 * A count over the last N whole steps (the current one included; a step is a minute unless `stepMs`
 * says otherwise): O(1) per add, bounded.
 */
export class StepWindow {
  private head: number | null = null;
  private readonly counts: number[];
  private total = 0;

  constructor(
    windowMs: number,
    state?: StepWindowState,
    private readonly stepMs = minuteMs,
  ) {
    const steps = Math.max(1, Math.round(windowMs / stepMs));
    this.counts = new Array<number>(steps).fill(0);
    if (state && state.counts.length === steps) {
      this.head = state.head;
      this.counts.splice(0, steps, ...state.counts);
      this.total = state.total;
    }
  }

  /** Adds `n` at `at`; a time older than the window (a very late exchange) counts in the oldest step kept. */
  add(at: number, n = 1): void {
    const step = Math.floor(at / this.stepMs);
    this.advance(step);
    const head = this.head as number;
    const kept = Math.max(step, head - this.counts.length + 1);
    this.counts[kept % this.counts.length] = (this.counts[kept % this.counts.length] ?? 0) + n;
    this.total += n;
  }

  /** The count over the window that ends at `at`. */
  sum(at: number): number {
    this.advance(Math.floor(at / this.stepMs));
    return this.total;
  }

  /** Where the window starts, ms since the epoch. */
  from(): number {
    return this.head === null ? 0 : (this.head - this.counts.length + 1) * this.stepMs;
  }

  private advance(step: number): void {
    if (this.head === null) {
      this.head = step;
      return;
    }
    if (step <= this.head) return;
    const passed = Math.min(step - this.head, this.counts.length);
    for (let n = 1; n <= passed; n += 1) {
      const index = (this.head + n) % this.counts.length;
      this.total -= this.counts[index] ?? 0;
      this.counts[index] = 0;
    }
    this.head = step;
  }

  state(): StepWindowState {
    return { head: this.head, counts: [...this.counts], total: this.total };
  }
}

/** The last `size` exchanges of a kind: the evidence a finding shows. */
export class Ring {
  private readonly items: Exchange[];
  private next = 0;

  constructor(
    private readonly size: number,
    state?: Exchange[],
  ) {
    this.items = state ? state.slice(-size) : [];
    this.next = this.items.length % size;
  }

  push(exchange: Exchange): void {
    if (this.items.length < this.size) this.items.push(exchange);
    else this.items[this.next] = exchange;
    this.next = (this.next + 1) % this.size;
  }

  /** Oldest first. */
  list(): Exchange[] {
    return this.items.length < this.size
      ? [...this.items]
      : [...this.items.slice(this.next), ...this.items.slice(0, this.next)];
  }
}
