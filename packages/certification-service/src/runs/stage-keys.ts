import { Worker } from 'node:worker_threads';
import type { StageSigningKey } from '@partner-lending/conformance';
import { InternalError } from '../errors.js';
import { threadBusy } from '../observability/thread-use.js';

/**
 * Run stage keys (RSA-2048) prepared ahead, so that a run's creation takes one instead of generating
 * it: at most `size` wait ready, one is generated at a time, and never on the thread pool every request
 * shares (libuv's: file reads, DNS, WebCrypto) but on key threads of their own at a lower OS priority
 * (see `keyThreads`), so that on a busy machine the HTTP thread is served before a key. A creation that
 * finds none ready waits for the next; among the partners waiting, the one whose last key is oldest is
 * served first (one that took none before all), and the last key ready is kept from the partner that
 * took the latest one, so that one partner's stream of creations waits behind itself and another
 * partner's creation finds a key ready, or waits for the next one done. While
 * creations of more than one partner wait, up to `lanes` keys are generated at once. The pool fills
 * from the first `take` on; a key for the pool, which no creation waits for, is started only once no
 * creation has come for `settleMs` and while no requests keep the HTTP thread busy (`busy`): the
 * runs just created start their journeys together, and on a machine of few cores a key takes a whole
 * one for a few hundred ms, which their first second needs (a key thread's lower OS priority did not
 * keep it off the core on a 2-core machine).
 */
export interface StageKeyPool {
  /** A key for a creation of `partnerId`'s; the waiting partner whose last key is oldest is served first. */
  take(partnerId?: string): Promise<StageSigningKey>;
  /** Keys ready now (for tests and the bench). */
  ready(): number;
  close(): void;
}

export interface StageKeyPoolOptions {
  /** Keys kept ready (default 4). */
  size?: number;
  /** Keys generated at once at most, while creations of several partners wait (default 2). */
  lanes?: number;
  /** Generates a key (default: on key threads, see `keyThreads`). */
  generate?: () => Promise<StageSigningKey>;
  /**
   * Whether requests keep the HTTP thread busy now: a key for the pool then waits, and asks again every
   * `deferMs` (default: the thread's event loop used over `refillThreshold`, 20%, since the last look).
   */
  busy?: () => boolean;
  /** How often a key for the pool held back by `busy` asks again (ms, default 100). */
  deferMs?: number;
  /**
   * A key for the pool waits until no creation has come for this long (ms, default 2000): the journeys
   * of the runs just created open meanwhile. Creations more often than that get keys made for them.
   */
  settleMs?: number;
}

/**
 * Past this share of its time running callbacks, the HTTP thread is serving runs, and a key for the pool
 * waits. Lower than the drain's `busyThreshold`: a key takes a whole core for a few hundred ms, which
 * runs' journeys need on a machine of few cores even where they leave the thread half idle. Measured on
 * PostgreSQL, 50 journeys used 20 to 60% of the thread in their first seconds, and a key started 1.4 s
 * in, at 70%, took 1 s of CPU there.
 */
export const refillThreshold = 0.2;

export function stageKeyPool(options: StageKeyPoolOptions = {}): StageKeyPool {
  const size = options.size ?? 4;
  const lanes = Math.max(1, options.lanes ?? 2);
  const deferMs = options.deferMs ?? 100;
  const settleMs = options.settleMs ?? 2000;
  /** When a creation last took a key, asked for one or was served one that it waited for (performance.now()). */
  let lastTakeAt = Number.NEGATIVE_INFINITY;
  const busy = options.busy ?? threadBusy(refillThreshold);
  /** The next look at `busy` for a key for the pool that waited. */
  let deferred: NodeJS.Timeout | undefined;
  const threads = options.generate ? undefined : keyThreads();
  const generate = options.generate ?? (() => threads!.generate());
  const ready: StageSigningKey[] = [];
  const turns = partnerTurns();
  /**
   * Whether the last key ready is kept from `partnerId` for another partner: one that just took a key
   * does not take the last one prepared (with `size` 0 nothing is kept).
   */
  const keptFrom = (partnerId: string | undefined) =>
    size > 0 && partnerId === turns.latest() && ready.length <= 1;
  let generating = 0;
  let closed = false;

  const fill = () => {
    // One lane, and one more per other partner waiting, up to `lanes`.
    const allowed = Math.min(lanes, Math.max(1, turns.partnersWaiting()));
    if (generating >= allowed || closed || ready.length + generating >= size + turns.waiting()) return;
    // A key no creation waits for: not within `settleMs` of a creation, nor while requests keep the HTTP
    // thread busy (a creation that comes meanwhile starts one at once, being waited for).
    if (turns.waiting() === 0) {
      const hold = lastTakeAt + settleMs - performance.now();
      if (hold > 0 || busy()) {
        deferred ??= setTimeout(
          () => {
            deferred = undefined;
            fill();
          },
          Math.max(hold, deferMs),
        ).unref();
        return;
      }
    }
    generating += 1;
    generate().then(
      (key) => {
        generating -= 1;
        // With none ready, the partner that took the latest key does not take this one: it is kept for
        // the next partner, who then finds a key at once (the next one done goes to the first).
        const next = size > 0 && ready.length === 0 ? turns.next(turns.latest()) : turns.next();
        if (next) {
          // A creation served now: its run's journey starts now too.
          lastTakeAt = performance.now();
          next.resolve(key);
        } else ready.push(key);
        fill();
      },
      (error: unknown) => {
        generating -= 1;
        const next = turns.next();
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
      lastTakeAt = performance.now();
      const key = keptFrom(partnerId) ? undefined : ready.shift();
      let promise: Promise<StageSigningKey>;
      if (key) {
        turns.turn(partnerId);
        promise = Promise.resolve(key);
      } else
        promise = new Promise<StageSigningKey>((resolve, reject) =>
          turns.wait(partnerId, { resolve, reject }),
        );
      fill();
      return promise;
    },
    ready: () => ready.length,
    close() {
      closed = true;
      clearTimeout(deferred);
      turns.rejectAll('the service is stopping');
      threads?.close();
    },
  };
}

type Waiter = { resolve: (key: StageSigningKey) => void; reject: (error: unknown) => void };

/**
 * The partners waiting for a stage key and whose turn is next: the partner whose last key is oldest
 * (one that took none first; the first to ask among equals).
 */
function partnerTurns() {
  /** Waiters by partner, in the order partners first asked. */
  const queues = new Map<string, Waiter[]>();
  /** When each partner last took a key (a tick of this pool), for the partners that took one lately. */
  const lastTurn = new Map<string, number>();
  let tick = 0;
  /** The partner that took the latest key. */
  let latest: string | undefined;
  let waitingCount = 0;
  const turn = (partnerId: string) => {
    latest = partnerId;
    // Forgotten partners (not waiting) are served first once more: at most one key's advantage.
    if (lastTurn.size >= 10_000) for (const id of lastTurn.keys()) if (!queues.has(id)) lastTurn.delete(id);
    lastTurn.delete(partnerId);
    lastTurn.set(partnerId, ++tick);
  };
  return {
    /** The partner that took the latest key. */
    latest: () => latest,
    /** Creations waiting for a key. */
    waiting: () => waitingCount,
    /** Partners with a creation waiting. */
    partnersWaiting: () => queues.size,
    /** `partnerId` takes a key now. */
    turn,
    /** `partnerId`'s creation waits for a key. */
    wait(partnerId: string, waiter: Waiter) {
      const queue = queues.get(partnerId) ?? [];
      queue.push(waiter);
      queues.set(partnerId, queue);
      waitingCount += 1;
    },
    /**
     * The waiter of the partner whose last key is oldest (one that took none first; the first to ask
     * among equals), other than `except`: its turn is taken.
     */
    next(except?: string): Waiter | undefined {
      let partner: string | undefined;
      let oldest = Number.POSITIVE_INFINITY;
      for (const id of queues.keys()) {
        if (id === except) continue;
        const last = lastTurn.get(id) ?? -1;
        if (last < oldest) {
          oldest = last;
          partner = id;
        }
      }
      if (partner === undefined) return undefined;
      const queue = queues.get(partner)!;
      const next = queue.shift()!;
      if (queue.length === 0) queues.delete(partner);
      waitingCount -= 1;
      turn(partner);
      return next;
    },
    /** Every waiting creation refused, each with an error saying `message`. */
    rejectAll(message: string) {
      for (const queue of queues.values())
        for (const waiter of queue) waiter.reject(new InternalError(message));
      queues.clear();
      waitingCount = 0;
    },
  };
}

// A key thread: generates one RS256 key (RSA-2048, PKCS #8 and SPKI PEM, as the conformance suite's
// generateStageSigningKey) per message, synchronously on itself, at a lower OS priority. On Linux
// setpriority(2) of "this process" (0) sets the calling thread's priority only.
const keyThreadSource = (nice: number) => `
const { parentPort } = require('node:worker_threads');
const { generateKeyPairSync } = require('node:crypto');
try { require('node:os').setPriority(${nice}); } catch {}
parentPort.on('message', () => {
  try {
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    parentPort.postMessage({ privateKeyPem: pair.privateKey, publicKeyPem: pair.publicKey });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message) });
  }
});
`;

/**
 * Threads that generate RS256 stage keys, one key at a time each, at OS priority `niceIncrement` (10:
 * on a busy machine the HTTP thread and the database come first; where the OS refuses, as it may
 * elsewhere than Linux, at the process's own). A thread is started when a key is asked for and none
 * is free, and stops after `idleMs` with nothing to do. Keeps no key once it has handed it over.
 */
export function keyThreads(options: { niceIncrement?: number; idleMs?: number } = {}) {
  const nice = Math.trunc(options.niceIncrement ?? 10);
  const idleMs = options.idleMs ?? 30_000;
  const source = keyThreadSource(nice);
  type Thread = { worker: Worker; idle?: NodeJS.Timeout };
  const free: Thread[] = [];
  const all = new Set<Thread>();
  let closed = false;
  const stop = (thread: Thread) => {
    clearTimeout(thread.idle);
    all.delete(thread);
    const index = free.indexOf(thread);
    if (index >= 0) free.splice(index, 1);
    void thread.worker.terminate();
  };
  return {
    /** Threads alive now (for tests). */
    threads: () => all.size,
    generate(): Promise<StageSigningKey> {
      if (closed) return Promise.reject(new InternalError('the service is stopping'));
      let thread = free.pop();
      if (thread) clearTimeout(thread.idle);
      else {
        thread = { worker: new Worker(source, { eval: true }) };
        thread.worker.unref();
        all.add(thread);
      }
      const current = thread;
      return new Promise<StageSigningKey>((resolve, reject) => {
        const done = () => {
          current.worker.off('message', onMessage);
          current.worker.off('error', onError);
          current.worker.off('exit', onExit);
        };
        const onMessage = (message: StageSigningKey & { error?: string }) => {
          done();
          if (closed) return stop(current);
          free.push(current);
          current.idle = setTimeout(() => stop(current), idleMs).unref();
          if (message.error)
            reject(new InternalError(`a stage key could not be generated: ${message.error}`));
          else resolve({ privateKeyPem: message.privateKeyPem, publicKeyPem: message.publicKeyPem });
        };
        const onError = (error: Error) => {
          done();
          stop(current);
          reject(new InternalError(`the stage key thread failed: ${error.message}`));
        };
        const onExit = (code: number) => {
          done();
          stop(current);
          reject(
            new InternalError(`the stage key thread stopped (exit code ${code}) before its key was ready`),
          );
        };
        current.worker.on('message', onMessage);
        current.worker.on('error', onError);
        current.worker.on('exit', onExit);
        current.worker.postMessage(0);
      });
    },
    close() {
      closed = true;
      for (const thread of [...all]) stop(thread);
    },
  };
}
