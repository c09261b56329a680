// Loaded into the service's and the local stages' processes by the cold bench (`--import`, BENCH_EVENT_LOOP=1): every 100 ms,
// the HTTP thread's event-loop use and longest delay, its CPU time, and the machine's idle share, with
// the wall-clock time; written as JSON to BENCH_EVENT_LOOP_FILE when the process exits. A thread used
// fully (use 1) but given less CPU than its wall time waits for a core: the machine is saturated.
import { readFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';
import { threadTime } from './measure.mjs';

const file = process.env.BENCH_EVENT_LOOP_FILE;
if (isMainThread && file) {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  /** The main thread's CPU ms (Linux: /proc; undefined elsewhere). */
  const threadCpu = () => threadTime(process.pid);
  /** The machine's idle and total jiffies (Linux). */
  const machine = () => {
    try {
      const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
      return { idle: fields[3] + fields[4], total: fields.reduce((a, b) => a + b, 0) };
    } catch {
      return undefined;
    }
  };
  const rows = [];
  let use = performance.eventLoopUtilization();
  let cpu = threadCpu();
  let cores = machine();
  const timer = setInterval(() => {
    const nowUse = performance.eventLoopUtilization();
    const nowCpu = threadCpu();
    const nowCores = machine();
    rows.push({
      at: Date.now(),
      use: performance.eventLoopUtilization(nowUse, use).utilization,
      maxDelayMs: delay.max / 1e6,
      ...(nowCpu !== undefined && cpu !== undefined && { cpuMs: nowCpu - cpu }),
      ...(nowCores &&
        cores &&
        nowCores.total > cores.total && {
          idle: (nowCores.idle - cores.idle) / (nowCores.total - cores.total),
        }),
    });
    use = nowUse;
    cpu = nowCpu;
    cores = nowCores;
    delay.reset();
  }, 100);
  timer.unref();
  process.on('exit', () => writeFileSync(file, JSON.stringify(rows)));
}
