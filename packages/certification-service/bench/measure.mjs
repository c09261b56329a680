// What the service's latency benches share: the load process, quantiles of its answers, CPU per thread
// of a process, and the machine's load average.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';

/** The value at quantile `q` of ascending `sorted` values. */
export const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
/** The median of `values` (the upper one of an even count). */
export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
export const ms = (value) => `${value.toFixed(2)} ms`;
export const signed = (value) => `${value >= 0 ? '+' : ''}${ms(value)}`;
/** The machine's load averages over 1, 5 and 15 minutes. */
export const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/**
 * The CPU time (ms) each thread of process `pid` has used, by thread id (Linux: /proc/PID/task; none
 * elsewhere): the main (HTTP) thread is the one whose id is the process's.
 */
export function threadTimes(pid = process.pid) {
  if (process.platform !== 'linux') return undefined;
  const times = new Map();
  let ids;
  try {
    ids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  for (const id of ids) {
    const used = threadTime(pid, id);
    // undefined: the thread ended meanwhile.
    if (used !== undefined) times.set(id, used);
  }
  return times;
}

/** The CPU time (ms) thread `id` of process `pid` has used (Linux); undefined when it cannot be read. */
export function threadTime(pid, id = pid) {
  try {
    // utime and stime, in clock ticks of 10 ms, after the command's closing parenthesis.
    const fields = readFileSync(`/proc/${pid}/task/${id}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** CPU per call (µs) of process `pid` since `before` (threadTimes): its main thread's, and every other's. */
export function cpuPerCall(before, calls, pid = process.pid) {
  const after = threadTimes(pid);
  if (!before || !after) return undefined;
  let main = 0;
  let others = 0;
  for (const [id, used] of after) {
    const spent = used - (before.get(id) ?? 0);
    if (id === String(pid)) main += spent;
    else others += spent;
  }
  return { http: (main * 1000) / calls, others: (others * 1000) / calls };
}
export const cpuLine = (cpu) =>
  cpu ? `CPU per call ${cpu.http.toFixed(0)} µs HTTP thread, ${cpu.others.toFixed(0)} µs other threads` : '';

/** Runs the load process (bench/load.mjs) on `input`; what it measured. */
export async function journeys(input) {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./load.mjs', import.meta.url))], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin.end(JSON.stringify(input));
  const [output, [code]] = await Promise.all([text(child.stdout), once(child, 'exit')]);
  if (code !== 0) throw new Error(`the load process exited with ${code}`);
  return JSON.parse(output);
}

/**
 * The open loop's calls (traced: `trace` in the input) by slot of `slotMs` of their intended time over
 * the first `seconds`: each slot's calls, p50, p99 and max (ms).
 */
export function bySlot(all, slotMs, seconds) {
  const latencies = Array.from({ length: Math.ceil((seconds * 1000) / slotMs) }, () => []);
  for (const item of all)
    for (const [at, latency] of item.traced ?? []) latencies[Math.floor(at / slotMs)]?.push(latency);
  return latencies.map((slot) => {
    slot.sort((a, b) => a - b);
    return {
      calls: slot.length,
      p50: quantile(slot, 0.5) ?? 0,
      p99: quantile(slot, 0.99) ?? 0,
      max: slot.at(-1) ?? 0,
    };
  });
}

/** The open loop's answers of every run together: calls and token requests, their p50 and p99, statuses. */
export function summary(all) {
  const api = all.flatMap((item) => item.api).sort((a, b) => a - b);
  const quiet = all.flatMap((item) => item.quiet).sort((a, b) => a - b);
  const token = all.flatMap((item) => item.token).sort((a, b) => a - b);
  const statuses = {};
  for (const item of all)
    for (const [status, count] of Object.entries(item.statuses))
      statuses[status] = (statuses[status] ?? 0) + count;
  /** The calls refused 401, by the reason their answers give (open loop only). */
  const refusals = {};
  for (const item of all)
    for (const [reason, count] of Object.entries(item.refusals ?? {}))
      refusals[reason] = (refusals[reason] ?? 0) + count;
  return {
    calls: api.length,
    p50: quantile(api, 0.5),
    p99: quantile(api, 0.99),
    quiet: quiet.length,
    quietP99: quantile(quiet, 0.99),
    tokens: token.length,
    tokenP50: quantile(token, 0.5),
    tokenP99: quantile(token, 0.99),
    statuses,
    refusals,
  };
}
