/**
 * Group commit: `run` gets every item queued while its previous call was in flight, so that under load
 * many callers share one statement and one commit, and a caller alone waits for nothing but the end of
 * the event loop's current phase. (A batch starts on `setImmediate`, not at once: an embedded database
 * runs its statement on this thread, so nothing would queue while it runs; the requests read in the
 * same turn of the loop go out together instead.)
 *
 * Each caller's promise settles with its own result once the statement that carried its item is done:
 * a caller that awaits it knows its item is committed. When `run` throws, every caller of that batch
 * gets the error — unless `alone(error)` says the error may be one item's (bad data): then each item
 * goes again on its own, so that one caller's bad item never fails the others (a statement fails
 * whole, so nothing of the batch was kept).
 *
 * `weigh` bounds a batch (by default, `maxItems` items); an item heavier than `maxWeight` goes alone.
 */
export function batched<I, O>(
  run: (items: readonly I[]) => Promise<readonly O[]>,
  options: {
    maxItems: number;
    maxWeight?: number;
    weigh?: (item: I) => number;
    alone?: (error: unknown) => boolean;
  },
): (item: I) => Promise<O> {
  const { maxItems, maxWeight = Number.POSITIVE_INFINITY, weigh = () => 0, alone = () => false } = options;
  type Waiting = { item: I; resolve: (value: O) => void; reject: (error: unknown) => void };
  let queue: Waiting[] = [];
  let flying = false;

  function take(): Waiting[] {
    let weight = 0;
    let count = 0;
    while (count < queue.length && count < maxItems) {
      weight += weigh(queue[count]!.item);
      if (count > 0 && weight > maxWeight) break;
      count += 1;
    }
    const batch = queue.slice(0, count);
    queue = queue.slice(count);
    return batch;
  }

  /** Runs a batch; settles every caller of it. */
  async function send(batch: Waiting[]): Promise<void> {
    try {
      const results = await run(batch.map((waiting) => waiting.item));
      if (results.length !== batch.length)
        throw new Error(`a batch of ${batch.length} gave ${results.length} results`);
      for (const [index, waiting] of batch.entries()) waiting.resolve(results[index]!);
    } catch (error) {
      if (batch.length > 1 && alone(error)) for (const waiting of batch) await send([waiting]);
      else for (const waiting of batch) waiting.reject(error);
    }
  }

  async function flush(): Promise<void> {
    while (queue.length > 0) await send(take());
    flying = false;
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!flying) {
        flying = true;
        setImmediate(() => void flush());
      }
    });
}
