import type { Exchange } from '../../evidence/exchange.js';

interface Held {
  exchange: Exchange;
  seq: number;
}

const before = (a: Held, b: Held) =>
  a.exchange.at < b.exchange.at || (a.exchange.at === b.exchange.at && a.seq < b.seq);

/**
 * Exchanges held until no earlier one can still arrive: released in time order once the newest seen is
 * `skewMs` ahead of them (a binary heap: O(log n) each), or at once when more than `max` are held.
 */
export class Reorder {
  private readonly heap: Held[] = [];
  private seq = 0;
  private newest = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly skewMs: number,
    private readonly max: number,
    held: readonly Exchange[] = [],
  ) {
    for (const exchange of held) this.push(exchange);
  }

  push(exchange: Exchange): void {
    if (exchange.at > this.newest) this.newest = exchange.at;
    const heap = this.heap;
    heap.push({ exchange, seq: this.seq++ });
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!before(heap[index]!, heap[parent]!)) break;
      [heap[index], heap[parent]] = [heap[parent]!, heap[index]!];
      index = parent;
    }
  }

  /** Hands every exchange that may be judged now to `judge`, oldest first. */
  release(judge: (exchange: Exchange) => void): void {
    const until = this.newest - this.skewMs;
    while (this.heap.length > 0 && (this.heap[0]!.exchange.at <= until || this.heap.length > this.max))
      judge(this.pop());
  }

  /** The exchanges still held, in arrival order (for a state). */
  held(): Exchange[] {
    return [...this.heap].sort((a, b) => a.seq - b.seq).map((item) => item.exchange);
  }

  private pop(): Exchange {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let index = 0;
      for (;;) {
        const left = index * 2 + 1;
        const right = left + 1;
        let least = index;
        if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
        if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
        if (least === index) break;
        [heap[index], heap[least]] = [heap[least]!, heap[index]!];
        index = least;
      }
    }
    return top.exchange;
  }
}
