/**
 * Group commit: `run` gets every item queued while its previous call was in flight, so that under load
 * many callers share one statement and one commit, and a caller alone waits for nothing but the end of
 * the event loop's current phase. (A batch starts on `setImmediate`, not at once: an embedded database
 * runs its statement on this thread, so nothing would queue while it runs; the requests read in the
 * same turn of the loop go out together instead.) Each caller's promise settles with its own result once the statement that carried its
 * item is done: a caller that awaits it knows its item is committed. When `run` throws, every caller
 * of that batch gets the error.
 *
 * `weigh` bounds a batch (by default, `maxItems` items); an item heavier than `maxWeight` goes alone.
 */
export function batched<I, O>(
  run: (items: readonly I[]) => Promise<readonly O[]>,
  options: { maxItems: number; maxWeight?: number; weigh?: (item: I) => number },
): (item: I) => Promise<O> {
  const { maxItems, maxWeight = Number.POSITIVE_INFINITY, weigh = () => 0 } = options;
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

  async function flush(): Promise<void> {
    while (queue.length > 0) {
      const batch = take();
      try {
        const results = await run(batch.map((waiting) => waiting.item));
        if (results.length !== batch.length)
          throw new Error(`a batch of ${batch.length} gave ${results.length} results`);
        for (const [index, waiting] of batch.entries()) waiting.resolve(results[index]!);
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
    }
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
