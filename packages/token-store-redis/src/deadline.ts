import { RedisTokenStoreError } from './errors.js';

/**
 * No answer within the store's own deadline: Redis cannot be reached now (`ERR_REDIS_UNAVAILABLE`). A
 * subclass so that the connection can tell a timeout from another failure; not exported.
 */
export class CommandTimeout extends RedisTokenStoreError {
  constructor(message: string) {
    super('ERR_REDIS_UNAVAILABLE', message);
  }
}

/** A deadline timer that fires this much later than asked: this process's event loop was stalled. */
const STALLED_BY_MS = 50;
/** After a stalled timer, the answer gets this much longer (at most the deadline itself)… */
const GRACE_MS = 100;
/** …and this many times at most, however often the process stalls again. */
const MAX_GRACES = 5;

/**
 * Settles like `promise`, or rejects with a CommandTimeout after `ms` (a timer of our own).
 *
 * A timer that fires late says this process's event loop was stalled (a starved host, a long
 * synchronous task), not that Redis was slow: Node runs due timers before it reads the sockets, so the
 * answer may be waiting unread. The promise then gets a short grace (GRACE_MS, at most `ms`, at most
 * MAX_GRACES times) for the loop to read it; a timer that fires on time rejects. So a server that never
 * answers still fails the command (within a grace of the stall), and an answer that came during a
 * stall is not taken for a hung Redis (which would skip Redis for the whole process).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let graces = 0;
    const arm = (wait: number) => {
      const due = performance.now() + wait;
      timer = setTimeout(() => {
        if (performance.now() - due > STALLED_BY_MS && graces < MAX_GRACES) {
          graces++;
          return arm(Math.min(GRACE_MS, ms));
        }
        reject(new CommandTimeout(`no answer to ${what} within ${ms} ms`));
      }, wait);
    };
    arm(ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
