import { type Context, context, type Link, SpanKind, trace } from '@opentelemetry/api';
import { InternalError } from '../errors.js';
import { dbBatchDuration, dbBatchSize, dbBatchWait } from '../observability/metrics.js';
import { inSpan } from '../observability/tracing.js';

/**
 * Group commit: `run` gets every item queued while its previous call was in flight (and one turn of the
 * event loop after it), so that under load
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
 * `name` names the batch in metrics (its size, its items' wait) and in its span, a child of its first
 * caller's span linked to the others'.
 *
 * `inFlight` (default 1) lets that many batches be in flight at once: an item queued while a batch waits
 * for its commit goes out in the next turn of the event loop on another connection, rather than waiting
 * for that commit first (where the database is a server whose commits wait for its disk, PostgreSQL
 * flushes concurrent commits together). Each caller still settles only once its own batch is done. Under
 * load every slot is busy and the batches grow as with one; alone, a call waits for one commit, not for
 * the rest of another's.
 */
export function batched<I, O>(
  run: (items: readonly I[]) => Promise<readonly O[]>,
  options: {
    maxItems: number;
    maxWeight?: number;
    weigh?: (item: I) => number;
    alone?: (error: unknown) => boolean;
    name?: string;
    inFlight?: number;
  },
): (item: I) => Promise<O> {
  const {
    maxItems,
    maxWeight = Number.POSITIVE_INFINITY,
    weigh = () => 0,
    alone = () => false,
    name = 'statement',
    inFlight = 1,
  } = options;
  type Waiting = {
    item: I;
    resolve: (value: O) => void;
    reject: (error: unknown) => void;
    queuedAt: number;
    context: Context;
  };
  let queue: Waiting[] = [];
  /** The batches being sent (each `flush` sends one at a time). */
  let flying = 0;

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
      const results = await observedStatement(name, batch, () => run(batch.map((waiting) => waiting.item)));
      if (results.length !== batch.length)
        throw new InternalError(`a batch of ${batch.length} gave ${results.length} results`);
      for (const [index, waiting] of batch.entries()) waiting.resolve(results[index]!);
    } catch (error) {
      if (batch.length > 1 && alone(error)) for (const waiting of batch) await send([waiting]);
      else for (const waiting of batch) waiting.reject(error);
    }
  }

  async function flush(): Promise<void> {
    while (queue.length > 0) {
      await send(take());
      // One turn of the event loop before the next batch, so that it carries what was read meanwhile:
      // an embedded database blocks this thread while its statement runs, and the requests that
      // arrived then are read only now. Sent at once instead, the next batch would carry only the few
      // items queued in between, and the batches after it would stay that small, one after another,
      // each costing a commit while the requests wait unread.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    flying -= 1;
  }

  /** Flushes queued after the one starting do not start another (it takes what they queued). */
  let starting = false;
  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject, queuedAt: performance.now(), context: context.active() });
      if (flying < inFlight && !starting) {
        flying += 1;
        starting = true;
        setImmediate(() => {
          starting = false;
          void flush();
        });
      }
    });
}

/**
 * Runs one grouped statement carrying `items`, measured (`certification_db_batch_*` by `name`: size,
 * each item's wait since `queuedAt`, duration by outcome) and traced (a span `db batch <name>`, a child
 * of the first item's context, linked to the others').
 */
export async function observedStatement<T>(
  name: string,
  items: readonly { queuedAt?: number | undefined; context?: Context | undefined }[],
  run: () => Promise<T>,
): Promise<T> {
  const sentAt = performance.now();
  dbBatchSize.observe({ batch: name }, items.length);
  for (const item of items)
    if (item.queuedAt !== undefined) dbBatchWait.observe({ batch: name }, (sentAt - item.queuedAt) / 1000);
  const links: Link[] = [];
  for (const item of items.slice(1, 32)) {
    const span = item.context && trace.getSpan(item.context);
    if (span) links.push({ context: span.spanContext() });
  }
  try {
    const result = await inSpan(
      `db batch ${name}`,
      { kind: SpanKind.CLIENT, attributes: { 'db.operation.batch.size': items.length }, links },
      run,
      items[0]?.context ?? context.active(),
    );
    dbBatchDuration.observe({ batch: name, outcome: 'ok' }, (performance.now() - sentAt) / 1000);
    return result;
  } catch (error) {
    dbBatchDuration.observe({ batch: name, outcome: 'error' }, (performance.now() - sentAt) / 1000);
    throw error;
  }
}
