import { generateStageSigningKey, type StageSigningKey } from '@partner-lending/conformance';

/**
 * Run stage keys (RSA-2048) prepared ahead, so that a run's creation takes one instead of generating
 * it: at most `size` wait ready, and at most one is generated at a time, so that key generation never
 * takes more than one thread of the pool every request shares (libuv's: file reads, DNS, WebCrypto) and
 * one partner's burst of creations cannot starve another's calls. A creation that finds none ready
 * waits for the next, in arrival order. The pool fills from the first `take` on.
 */
export interface StageKeyPool {
  take(): Promise<StageSigningKey>;
  /** Keys ready now (for tests and the bench). */
  ready(): number;
  close(): void;
}

export function stageKeyPool(
  options: { size?: number; generate?: () => Promise<StageSigningKey> } = {},
): StageKeyPool {
  const size = options.size ?? 4;
  const generate = options.generate ?? generateStageSigningKey;
  const ready: StageSigningKey[] = [];
  const waiting: Array<{ resolve: (key: StageSigningKey) => void; reject: (error: unknown) => void }> = [];
  let generating = false;
  let closed = false;

  const fill = () => {
    if (generating || closed || ready.length >= size + waiting.length) return;
    generating = true;
    generate().then(
      (key) => {
        generating = false;
        const next = waiting.shift();
        if (next) next.resolve(key);
        else ready.push(key);
        fill();
      },
      (error: unknown) => {
        generating = false;
        const next = waiting.shift();
        next?.reject(error);
        if (!next) setTimeout(fill, 1000).unref();
        else fill();
      },
    );
  };
  // Filled from the first creation on, not at start: an instance that never creates a run (or a
  // restart under load) spends nothing on keys.
  return {
    take() {
      const key = ready.shift();
      const taken = key
        ? Promise.resolve(key)
        : new Promise<StageSigningKey>((resolve, reject) => waiting.push({ resolve, reject }));
      fill();
      return taken;
    },
    ready: () => ready.length,
    close() {
      closed = true;
      for (const next of waiting.splice(0)) next.reject(new Error('the service is stopping'));
    },
  };
}
