import { performance } from 'node:perf_hooks';

/**
 * Past this share of its time running callbacks, the HTTP thread is kept busy by requests (a burst):
 * background work that can wait (the journal file's drain) waits. A stage key for the pool waits for a
 * quieter thread (`refillThreshold` in runs/stage-keys.ts).
 */
export const busyThreshold = 0.7;

/**
 * The calling thread's event loop use since the previous call (0 to 1; the first call measures from
 * when this was made): the share of that time it ran callbacks rather than waited for I/O.
 */
export function threadUse(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const use = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return use;
  };
}

/**
 * Whether requests keep the calling thread busy: its use over `threshold` (default `busyThreshold`)
 * since the previous call.
 */
export function threadBusy(threshold = busyThreshold): () => boolean {
  const use = threadUse();
  return () => use() > threshold;
}
