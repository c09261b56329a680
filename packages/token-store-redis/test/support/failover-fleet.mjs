// A fleet of real `node` processes (failover-worker.mjs) through one primary failover: the primary is
// SIGKILLed while they call getToken(), the promotion is timed from outside (the topology as Redis
// reports it), and what every process delivered is checked: expired, foreign, crashed, over deadline,
// and when each process was back on Redis after the promotion. Used by the tests and the bench.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./failover-worker.mjs', import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const digest = (token) => createHash('sha256').update(token).digest('hex').slice(0, 12);

/** Starts one worker with `job`; resolves once it printed READY (60 s at most: a starved host starts slowly). */
function startWorker(job) {
  const child = spawn(
    process.execPath,
    [...(process.env.FAILOVER_NODE_ARGS ?? '').split(' ').filter(Boolean), script],
    {
      env: { ...process.env, FLEET_JOB: JSON.stringify(job), NODE_NO_WARNINGS: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr.on('data', (chunk) => {
    if (err.length < 20_000) err += chunk;
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const ready = new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('READY\n')) {
        clearInterval(timer);
        resolve();
      }
    }, 20);
    setTimeout(() => {
      clearInterval(timer);
      reject(new Error(`worker not READY in 60 s: ${out} ${err}`));
    }, 60_000).unref();
    exited.then(() => {
      clearInterval(timer);
      reject(new Error(`worker exited before READY: ${out} ${err}`));
    });
  });
  return {
    ready,
    go: () => child.stdin.write('go\n'),
    kill: () => child.kill('SIGKILL'),
    output: () => out + err,
    result: async () => {
      const code = await exited;
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.startsWith('{')) {
        throw new Error(
          `worker failed (exit ${code}); stdout: ${out.slice(-300)} stderr: ${err.length > 900 ? `${err.slice(0, 500)} … ${err.slice(-400)}` : err}`,
        );
      }
      return JSON.parse(last);
    },
  };
}

/**
 * Runs `processes` workers (`listeners(i)` decides whether the application adds its own 'error'
 * listener) and `controls` negative controls (the client, a subscription, no store, no listener),
 * kills the primary at `killAtMs` with `kill()` (resolving with the killed primary) and polls
 * `primary()` every 50 ms until another one answers: that moment is the promotion. With `coldAtMs`,
 * one more worker (with a listener) starts cold that long after the kill and runs until the others
 * end. Without `kill`, nothing is killed (a baseline run); requests are counted from `killAtMs` all
 * the same.
 */
export async function runFailover(options) {
  const { job, processes, tokens } = options;
  const listening = Array.from({ length: processes }, (_, i) => options.listeners(i));
  const workers = listening.map((listener) => startWorker({ ...job, listener }));
  const controls = Array.from({ length: options.controls ?? 0 }, () =>
    startWorker({ ...job, listener: false, bare: true, callers: 1 }),
  );
  // A worker that never gets READY fails the run, and takes the others down with it (no orphans).
  await Promise.all([...workers, ...controls].map((w) => w.ready)).catch((error) => {
    for (const w of [...workers, ...controls]) w.kill();
    throw error;
  });
  for (const w of [...workers, ...controls]) w.go();
  const wentAt = Date.now();
  await sleep(options.killAtMs);
  const killedAt = Date.now();
  let promotedAt = Number.NaN;
  // The cold process: started during the failover, it runs until the fleet's end.
  const cold =
    options.coldAtMs === undefined
      ? undefined
      : sleep(options.coldAtMs).then(() => {
          const worker = startWorker({ ...job, listener: true, cold: true, endAt: wentAt + job.durationMs });
          worker.ready.then(worker.go, () => {});
          // Bounded: a cold worker still running 15 s after the fleet's end is stopped (and counted).
          const limit = setTimeout(worker.kill, Math.max(0, wentAt + job.durationMs + 15_000 - Date.now()));
          worker.result().then(
            () => clearTimeout(limit),
            () => clearTimeout(limit),
          );
          return worker;
        });
  if (options.kill) {
    const killed = await options.kill();
    for (let i = 0; i < 600; i++) {
      const now = await options.primary().catch(() => killed);
      if (now !== killed && Number.isFinite(now) && now > 0) {
        promotedAt = Date.now();
        break;
      }
      await sleep(50);
    }
  }
  const coldWorker = await cold;
  const settled = await Promise.allSettled(workers.map((w) => w.result()));
  const coldSettled = coldWorker ? await Promise.allSettled([coldWorker.result()]) : [];
  const controlSettled = await Promise.allSettled(controls.map((w) => w.result()));
  const results = [];
  const crashes = [];
  let crashesWithListener = 0;
  let crashesWithoutListener = 0;
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') results.push(s.value);
    else {
      crashes.push(
        `worker ${i} (${listening[i] ? 'with' : 'without'} a listener): ${String(s.reason).slice(0, 1_500)}`,
      );
      if (listening[i]) crashesWithListener++;
      else crashesWithoutListener++;
    }
  });
  /** The cold process: its result (its calls count with the fleet's), or its crash. */
  let coldResult;
  if (coldSettled[0]?.status === 'fulfilled') coldResult = coldSettled[0].value;
  else if (coldSettled[0]?.status === 'rejected') {
    crashes.push(`the cold worker (with a listener): ${String(coldSettled[0].reason).slice(0, 1_500)}`);
    crashesWithListener++;
  }
  const all = coldResult ? [...results, coldResult] : results;
  const issued = new Set(tokens.issued.map(digest));
  const backAfterPromotionMs = [];
  const backAfterClientReadyMs = [];
  let neverBack = 0;
  /** The timeline of the process back last, relative to the promotion (for a slow failover's account). */
  let lastBack;
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
    if (lastBack === undefined || back[1] - promotedAt > lastBack.ms) {
      lastBack = {
        ms: back[1] - promotedAt,
        timeline: r.timeline
          .filter(([, at]) => at >= killedAt - 200)
          .map(([type, at, detail]) => `${at - promotedAt} ${type}${detail ? ` ${detail}` : ''}`),
      };
    }
    // What the store added: from the client's own 'ready' (a sentinel's new primary) to the store's.
    const clientReady = after.filter(([type, at]) => type === 'client-ready' && at <= back[1]).at(-1);
    if (clientReady !== undefined) backAfterClientReadyMs.push(back[1] - clientReady[1]);
  }
  const sum = (pick) => all.reduce((t, r) => t + pick(r), 0);
  return {
    results,
    cold: coldResult,
    crashes,
    crashesWithListener,
    crashesWithoutListener,
    killedAt,
    promotedAt,
    calls: sum((r) => r.calls),
    failed: sum((r) => r.failed),
    errors: all.reduce((totals, r) => {
      for (const [code, n] of Object.entries(r.errors)) totals[code] = (totals[code] ?? 0) + n;
      return totals;
    }, {}),
    expired: sum((r) => r.expired + r.expiredByExp),
    foreign: all.flatMap((r) => r.tokens).filter((t) => !issued.has(t)).length,
    overDeadline: sum((r) => r.overDeadline),
    maxWaitMs: Math.max(0, ...all.map((r) => r.maxWaitMs)),
    maxStallMs: Math.max(0, ...all.map((r) => r.maxStallMs ?? 0)),
    minLeftMs: Math.min(...all.map((r) => r.minLeftMs ?? Number.POSITIVE_INFINITY)),
    backAfterPromotionMs,
    // The fleet is back on one shared token when its last process that had left is back on Redis.
    fleetBackMs: backAfterPromotionMs.length ? Math.max(...backAfterPromotionMs) : undefined,
    backAfterClientReadyMs,
    neverBack,
    lastBackTimeline: lastBack?.timeline ?? [],
    requestsFromKill: tokens.requestsSince(killedAt),
    /** What the Sentinel watch could not do (watch a sentinel, reach an announced primary), once each. */
    watchNotes: [
      ...new Set(
        results.flatMap((r) =>
          r.timeline
            .filter(([type, , m]) => type === 'sentinel-watch' && /could not/.test(m ?? ''))
            .map(([, , m]) => m),
        ),
      ),
    ],
    controls: controls.length,
    controlsDied: controlSettled.filter((s) => s.status === 'rejected').length,
    controlOutput: controls.map((w) => w.output().slice(-300)),
  };
}

const range = (values) => (values.length ? `${Math.min(...values)}–${Math.max(...values)} ms` : 'n/a');

/** One line for the test log (and the bench): the figures of one failover. */
export function describeFailover(topology, o) {
  const back = o.backAfterPromotionMs;
  return `${topology} failover: promoted ${o.promotedAt - o.killedAt} ms after the SIGKILL; ${o.results.length} processes, ${o.crashes.length} crashed${o.cold ? `, a cold one connected in ${o.cold.connectMs} ms` : ''}; ${o.calls} calls, ${o.failed} failed${
    o.failed
      ? ` (${Object.entries(o.errors)
          .map(([code, n]) => `${n} ${code}`)
          .join(', ')})`
      : ''
  }, ${o.expired} expired, ${o.foreign} foreign, ${o.overDeadline} over deadline, slowest ${o.maxWaitMs} ms, longest event-loop stall ${o.maxStallMs} ms, least left at hand-over ${o.minLeftMs} ms; back on Redis after the promotion: ${back.length ? `${range(back)} (${back.length} processes had left)` : 'no process had left'}${o.backAfterClientReadyMs.length ? ` (${range(o.backAfterClientReadyMs)} after the client said ready)` : ''}${o.neverBack ? `, ${o.neverBack} never back` : ''}; ${o.requestsFromKill} token requests from the kill on${o.watchNotes?.length ? `; the Sentinel watch: ${o.watchNotes.join(' / ')}` : ''}`;
}
