// A fleet of real `node` processes (failover-worker.mjs) through one primary failover: the primary is
// SIGKILLed while they call getToken(), the promotion is timed from outside (the topology as Redis
// reports it), and what every process delivered is checked: expired, foreign, crashed, over deadline,
// and when each process was back on Redis after the promotion.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startWorker, type Worker } from './fleet.js';
import { sleep } from './loop-fleet.js';
import type { TokenServer } from './token-server.mjs';

const script = fileURLToPath(new URL('./failover-worker.mjs', import.meta.url));

export interface FailoverJob {
  topology: 'cluster' | 'sentinel';
  rootNodes?: { url: string }[];
  sentinelRootNodes?: { host: string; port: number }[];
  name?: string;
  tokenUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  encryptionKey: string;
  durationMs: number;
  timeoutMs: number;
  callers: number;
  intervalMs?: number;
  listener?: boolean;
  bare?: boolean;
  /** node-redis's default reconnection and topology refresh instead of the README's settings. */
  defaults?: boolean;
}

export interface FailoverWorkerResult {
  calls: number;
  failed: number;
  errors: Record<string, number>;
  maxWaitMs: number;
  overDeadline: number;
  expired: number;
  expiredByExp: number;
  minLeftMs: number | null;
  tokens: string[];
  storeEvents: Record<string, number>;
  timeline: [string, number][];
}

export interface FailoverOutcome {
  results: FailoverWorkerResult[];
  /** Workers that did not exit 0 with a result (a crash), with their output's tail. */
  crashes: string[];
  killedAt: number;
  promotedAt: number;
  calls: number;
  failed: number;
  expired: number;
  foreign: number;
  overDeadline: number;
  maxWaitMs: number;
  minLeftMs: number;
  /** Per process that left Redis during the failover: ms from the promotion to its last `redis-ready`. */
  backAfterPromotionMs: number[];
  /** Per process whose client announced itself ready again (Sentinel): ms from that to the store's `redis-ready`. */
  backAfterClientReadyMs: number[];
  /** Processes that left Redis and never said it was back. */
  neverBack: number;
  /** Token requests from the kill to the end of the run. */
  requestsFromKill: number;
  /** Negative controls (a client without a listener and without the store) that died, of how many. */
  controlsDied: number;
  controls: number;
  /** The end of a control's output (its crash). */
  controlOutput: string[];
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 12);

/**
 * Runs `processes` workers (each `job`, `listeners[i]` deciding whether the application adds its own
 * 'error' listener), kills the primary at `killAtMs` with `kill()` (which resolves with the killed
 * primary) and polls `primary()` every 50 ms until another one answers: that moment is the promotion.
 */
export async function runFailover(options: {
  job: FailoverJob;
  processes: number;
  listeners: (i: number) => boolean;
  tokens: TokenServer;
  killAtMs: number;
  kill: () => Promise<number>;
  primary: () => Promise<number>;
  /** Workers with the client and no store nor listener: they must die of the lost primary. */
  controls?: number;
}): Promise<FailoverOutcome> {
  const { job, processes, tokens } = options;
  const controls: Worker<FailoverWorkerResult>[] = await Promise.all(
    Array.from({ length: options.controls ?? 0 }, () =>
      startWorker<FailoverWorkerResult>({ ...job, listener: false, bare: true, callers: 1 }, script),
    ),
  );
  for (const w of controls) w.go();
  const workers: Worker<FailoverWorkerResult>[] = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      startWorker<FailoverWorkerResult>({ ...job, listener: options.listeners(i) }, script),
    ),
  );
  for (const w of workers) w.go();
  await sleep(options.killAtMs);
  const killedAt = Date.now();
  const killed = await options.kill();
  let promotedAt = Number.NaN;
  for (let i = 0; i < 600; i++) {
    const now = await options.primary().catch(() => killed);
    if (now !== killed && Number.isFinite(now) && now > 0) {
      promotedAt = Date.now();
      break;
    }
    await sleep(50);
  }
  const settled = await Promise.allSettled(workers.map((w) => w.result()));
  const results: FailoverWorkerResult[] = [];
  const crashes: string[] = [];
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') results.push(s.value);
    else crashes.push(`worker ${i}: ${String(s.reason).slice(-600)}`);
  });
  const controlSettled = await Promise.allSettled(controls.map((w) => w.result()));
  const controlOutput = controls.map((w) => w.output().slice(-300));
  const issued = new Set(tokens.issued.map(digest));
  const backAfterPromotionMs: number[] = [];
  const backAfterClientReadyMs: number[] = [];
  let neverBack = 0;
  for (const r of results) {
    const after = r.timeline.filter(([, at]) => at >= killedAt);
    const lastDown = after.filter(([type]) => type === 'redis-down' || type === 'redis-skipped').at(-1);
    if (lastDown === undefined) continue;
    const back = after.find(([type, at]) => type === 'redis-ready' && at >= lastDown[1]);
    if (back === undefined) {
      neverBack++;
      continue;
    }
    backAfterPromotionMs.push(back[1] - promotedAt);
    // What the store added: from the client's own 'ready' (a sentinel's new primary) to the store's.
    const clientReady = after.filter(([type, at]) => type === 'client-ready' && at <= back[1]).at(-1);
    if (clientReady !== undefined) backAfterClientReadyMs.push(back[1] - clientReady[1]);
  }
  const sum = (pick: (r: FailoverWorkerResult) => number) => results.reduce((t, r) => t + pick(r), 0);
  return {
    results,
    crashes,
    killedAt,
    promotedAt,
    calls: sum((r) => r.calls),
    failed: sum((r) => r.failed),
    expired: sum((r) => r.expired + r.expiredByExp),
    foreign: results.flatMap((r) => r.tokens).filter((t) => !issued.has(t)).length,
    overDeadline: sum((r) => r.overDeadline),
    maxWaitMs: Math.max(0, ...results.map((r) => r.maxWaitMs)),
    minLeftMs: Math.min(...results.map((r) => r.minLeftMs ?? Number.POSITIVE_INFINITY)),
    backAfterPromotionMs,
    backAfterClientReadyMs,
    neverBack,
    requestsFromKill: tokens.requestsSince(killedAt),
    controls: controls.length,
    controlsDied: controlSettled.filter((s) => s.status === 'rejected').length,
    controlOutput,
  };
}

/** One line for the test log (and the bench): the figures of one failover. */
export function describeFailover(topology: string, o: FailoverOutcome): string {
  const back = o.backAfterPromotionMs;
  return `${topology} failover: promoted ${o.promotedAt - o.killedAt} ms after the SIGKILL; ${o.results.length} processes, ${o.crashes.length} crashed; ${o.calls} calls, ${o.failed} failed, ${o.expired} expired, ${o.foreign} foreign, ${o.overDeadline} over deadline, slowest ${o.maxWaitMs} ms, least left at hand-over ${o.minLeftMs} ms; back on Redis after the promotion: ${back.length ? `${Math.min(...back)}–${Math.max(...back)} ms (${back.length} processes had left)` : 'no process had left'}${o.backAfterClientReadyMs.length ? ` (${Math.min(...o.backAfterClientReadyMs)}–${Math.max(...o.backAfterClientReadyMs)} ms after the client said ready)` : ''}${o.neverBack ? `, ${o.neverBack} never back` : ''}; ${o.requestsFromKill} token requests from the kill on`;
}
