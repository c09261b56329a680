// The production judge's throughput and memory: a simulated day of production traffic (the SDK profile of
// test/support/production-traffic.ts, the gate's faults included) spread over 1, 100 and 10 000 partners,
// each judged by its own createPartnerJudge, batches in the order reporters send them. Prints exchanges
// judged per second on one core against a baseline measured in the same run (a loop that only reads the
// same exchanges), the heap each partner's judge holds and its state() in bytes, and PASS or FAIL against
// BENCH_JUDGE_TARGET (10 000) exchanges a second. BENCH_JUDGE_EXCHANGES (400 000) exchanges per case;
// BENCH_JUDGE_PARTNERS (1,100,10000) the cases. Run with node --expose-gc (pnpm bench does) for the heap.
import type { Exchange } from '../src/evidence/exchange.js';
import { createPartnerJudge, type ProductionJudge } from '../src/regressions/windows.js';
import { clientProfiles, productionTraffic } from '../test/support/production-traffic.js';

const target = Number(process.env.BENCH_JUDGE_TARGET ?? 10_000);
const total = Number(process.env.BENCH_JUDGE_EXCHANGES ?? 400_000);
const cases = (process.env.BENCH_JUDGE_PARTNERS ?? '1,100,10000').split(',').map(Number);
const gc = (globalThis as { gc?: () => void }).gc;

/** Enough days of one partner's traffic for `total` exchanges, in report order. */
function traffic(): Exchange[] {
  const out: Exchange[] = [];
  for (let seed = 1; out.length < total; seed += 1)
    for (const batch of productionTraffic({ profile: clientProfiles[0]!, seed, peakCallsPerSecond: 3 })
      .batches)
      for (const exchange of batch) {
        // Day after day: each seed's day follows the last.
        const shift = (seed - 1) * 86_400_000;
        out.push({
          ...exchange,
          at: exchange.at + shift,
          ...(exchange.expiresAt === undefined ? {} : { expiresAt: exchange.expiresAt + shift }),
        });
        if (out.length === total) return out;
      }
  return out;
}

/** The stream dealt to `partners` partners in turn, each its own; batches of 500 grouped by partner as ingest hands them. */
function deal(stream: readonly Exchange[], partners: number): [string, Exchange[]][][] {
  const batches: [string, Exchange[]][][] = [];
  for (let start = 0; start < stream.length; start += 500) {
    const groups = new Map<string, Exchange[]>();
    for (let index = start; index < Math.min(stream.length, start + 500); index += 1) {
      const partnerId = `partner-${index % partners}`;
      const original = stream[index]!;
      // Each partner's own: its id in the path, its own fingerprints (a thinned copy of the stream).
      const exchange: Exchange = {
        ...original,
        partnerId,
        path: original.path.replace('/partner-a/', `/${partnerId}/`),
        ...(original.fingerprint === undefined
          ? {}
          : { fingerprint: `${original.fingerprint}@${partnerId}` }),
      };
      const group = groups.get(partnerId);
      if (group) group.push(exchange);
      else groups.set(partnerId, [exchange]);
    }
    batches.push([...groups]);
  }
  return batches;
}

function baseline(batches: [string, Exchange[]][][]): number {
  let sum = 0;
  for (const batch of batches)
    for (const [, group] of batch)
      for (const exchange of group)
        sum += exchange.at + exchange.status + exchange.path.length + (exchange.fingerprint?.length ?? 0);
  return sum;
}

function judgeAll(
  batches: [string, Exchange[]][][],
  judges: Map<string, ProductionJudge>,
): Map<string, number> {
  const findings = new Map<string, number>();
  for (const batch of batches)
    for (const [partnerId, group] of batch) {
      let judge = judges.get(partnerId);
      if (!judge) {
        judge = createPartnerJudge(partnerId);
        judges.set(partnerId, judge);
      }
      for (const finding of judge.observe(group)) {
        findings.set(finding.check, (findings.get(finding.check) ?? 0) + 1);
        if (process.env.BENCH_JUDGE_SHOW) console.log(`  ${finding.check}: ${finding.detail}`);
      }
    }
  return findings;
}

const seconds = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e9;
const heap = () => {
  gc?.();
  return process.memoryUsage().heapUsed;
};

const stream = traffic();
console.log(
  `regressions judge: ${stream.length} exchanges of simulated production traffic per case; target ${target} exchanges/s${gc ? '' : ' (no --expose-gc: heap figures are rough)'}`,
);
let failed = false;
for (const partners of cases) {
  const batches = deal(stream, partners);
  // Warm both loops, then time each twice and keep the better (a shared machine).
  baseline(batches);
  judgeAll(batches.slice(0, 50), new Map());
  let base = Number.POSITIVE_INFINITY;
  let judged = Number.POSITIVE_INFINITY;
  let findings = new Map<string, number>();
  let judges = new Map<string, ProductionJudge>();
  let heapPerPartner = 0;
  for (let round = 0; round < 2; round += 1) {
    let start = process.hrtime.bigint();
    baseline(batches);
    base = Math.min(base, seconds(start));
    judges = new Map();
    const before = heap();
    start = process.hrtime.bigint();
    findings = judgeAll(batches, judges);
    judged = Math.min(judged, seconds(start));
    heapPerPartner = (heap() - before) / judges.size;
  }
  let stateBytes = 0;
  for (const judge of judges.values()) stateBytes += JSON.stringify(judge.state()).length;
  const rate = stream.length / judged;
  const ok = rate >= target;
  failed ||= !ok;
  console.log(
    `${String(partners).padStart(6)} partners: ${Math.round(rate).toLocaleString('en')} exchanges/s judged, baseline ${Math.round(stream.length / base).toLocaleString('en')}/s (judge/baseline ${(judged / base).toFixed(0)}×); heap ${(heapPerPartner / 1024).toFixed(1)} KiB and state ${(stateBytes / judges.size / 1024).toFixed(1)} KiB per partner; ${findings.size === 0 ? 'no findings' : `findings ${[...findings].map(([check, n]) => `${check} ×${n}`).join(', ')}`}; ${ok ? 'PASS' : 'FAIL'} (≥ ${target}/s)`,
  );
}
if (failed) process.exitCode = 1;
