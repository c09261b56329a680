/** Time source: epoch milliseconds. Injected so the timing rules can be tested with a fake clock. */
export interface Clock {
  now(): number;
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const systemClock: Clock = { now: () => Date.now() };

export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Resolves or rejects like `promise`, but rejects as soon as `signal` aborts (the work goes on for others). */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    // The work goes on without this listener: its own rejection must not surface as an unhandled one.
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A deadline timer that fires this much later than asked: this process's event loop was stalled. */
const STALLED_BY_MS = 50;
/** After a stalled timer, the work gets this much longer (at most the deadline itself)… */
const GRACE_MS = 100;
/** …and this many times at most, however often the process stalls again. */
const MAX_GRACES = 5;

/**
 * A deadline owned by our code: a plain timer (kept by the event loop, so it fires whatever the
 * garbage collector does, unlike a signal referenced only by a collected Request) that aborts
 * `signal` with a `TimeoutError` after `ms`. `clear()` once the work is done.
 *
 * A timer that fires late says this process's event loop was stalled (a starved host, a long
 * synchronous task), not that the server was slow: Node runs due timers before it reads the sockets,
 * so the answer may be waiting unread, or the request not even sent. The work then gets a short grace
 * (100 ms, at most `ms`, at most 5 times) for the loop to catch up; a timer that fires on time aborts.
 * So a server that never answers still fails within a grace of the stall, and a token that came during
 * a stall is not thrown away (seen in the Redis store's failover bench: a fleet's `getToken` calls
 * failed ERR_TOKEN_TIMEOUT after 0.7–1.4-s stalls with the answer in the socket).
 */
export function startDeadline(ms: number, message: string): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout>;
  let graces = 0;
  const arm = (wait: number) => {
    const due = performance.now() + wait;
    timer = setTimeout(() => {
      if (performance.now() - due > STALLED_BY_MS && graces < MAX_GRACES) {
        graces++;
        arm(Math.min(GRACE_MS, ms));
        return;
      }
      controller.abort(new DOMException(message, 'TimeoutError'));
    }, wait);
  };
  arm(ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}
