import { generateStageSigningKey, type StageSigningKey } from '@partner-lending/conformance';

/**
 * Run stage keys (RSA-2048) prepared ahead, so that a run's creation takes one instead of generating
 * it: at most `size` wait ready, and one is generated at a time, so that key generation never takes
 * more than one thread of the pool every request shares (libuv's: file reads, DNS, WebCrypto) and one
 * partner's burst of creations cannot starve another's calls. A creation that finds none ready waits
 * for the next, partners in turn. While creations of more than one partner wait, up to `lanes` keys
 * are generated at once (one per partner waiting), so that a partner who keeps the pool empty (its
 * creations refused only by its open-run cap) does not halve another's rate of keys. The pool fills
 * from the first `take` on.
 */
export interface StageKeyPool {
  /** A key for a creation of `partnerId`'s; partners waiting take turns (one partner's burst waits behind itself). */
  take(partnerId?: string): Promise<StageSigningKey>;
  /** Keys ready now (for tests and the bench). */
  ready(): number;
  close(): void;
}

export function stageKeyPool(
  options: { size?: number; lanes?: number; generate?: () => Promise<StageSigningKey> } = {},
): StageKeyPool {
  const size = options.size ?? 4;
  const lanes = Math.max(1, options.lanes ?? 2);
  const generate = options.generate ?? generateStageSigningKey;
  const ready: StageSigningKey[] = [];
  type Waiter = { resolve: (key: StageSigningKey) => void; reject: (error: unknown) => void };
  /** Waiters by partner, in the order partners first asked; served round-robin. */
  const queues = new Map<string, Waiter[]>();
  let waitingCount = 0;
  const nextWaiter = (): Waiter | undefined => {
    for (const [partner, queue] of queues) {
      const next = queue.shift();
      queues.delete(partner);
      if (queue.length > 0) queues.set(partner, queue); // to the back of the line
      if (next) {
        waitingCount -= 1;
        return next;
      }
    }
    return undefined;
  };
  let generating = 0;
  let closed = false;

  const fill = () => {
    // One lane, and one more per other partner waiting, up to `lanes`.
    const allowed = Math.min(lanes, Math.max(1, queues.size));
    if (generating >= allowed || closed || ready.length + generating >= size + waitingCount) return;
    generating += 1;
    generate().then(
      (key) => {
        generating -= 1;
        const next = nextWaiter();
        if (next) next.resolve(key);
        else ready.push(key);
        fill();
      },
      (error: unknown) => {
        generating -= 1;
        const next = nextWaiter();
        next?.reject(error);
        if (!next) setTimeout(fill, 1000).unref();
        else fill();
      },
    );
    fill();
  };
  // Filled from the first creation on, not at start: an instance that never creates a run (or a
  // restart under load) spends nothing on keys.
  return {
    take(partnerId = '') {
      const key = ready.shift();
      const taken = key
        ? Promise.resolve(key)
        : new Promise<StageSigningKey>((resolve, reject) => {
            const queue = queues.get(partnerId) ?? [];
            queue.push({ resolve, reject });
            queues.set(partnerId, queue);
            waitingCount += 1;
          });
      fill();
      return taken;
    },
    ready: () => ready.length,
    close() {
      closed = true;
      for (let next = nextWaiter(); next; next = nextWaiter())
        next.reject(new Error('the service is stopping'));
    },
  };
}
