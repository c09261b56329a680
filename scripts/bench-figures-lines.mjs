// What `pnpm bench:figures` keeps of each bench's output: the lines that state a figure over all rounds
// (the benches print every round too; those stay on the terminal as they come).

/**
 * The benches `pnpm bench:figures` runs, in order: where each lives, how it is run, and what of its output
 * is a summary. `env` receives the rounds and failovers asked for.
 */
export const sections = [
  {
    name: 'cold',
    title: 'cold and warm, a fresh service instance against local stages started fresh, both stores',
    cwd: 'packages/certification-service',
    script: 'bench/cold.bench.mjs',
    env: ({ rounds }) => ({ BENCH_COLD_ROUNDS: String(rounds) }),
  },
  {
    name: 'instances',
    title:
      'throughput and latency, one instance per store (PostgreSQL shared, and with a journal) against local stages',
    cwd: 'packages/certification-service',
    script: 'bench/runs.bench.mjs',
    env: ({ rounds }) => ({
      BENCH_PARTS: 'throughput,latency',
      BENCH_ROUNDS: String(rounds),
      BENCH_LATENCY_ROUNDS: String(rounds),
    }),
  },
  {
    name: 'failover',
    title: 'the fleet back on one shared token after a primary is killed, Cluster and Sentinel, per trial',
    cwd: 'packages/token-store-redis',
    script: 'bench/failover.bench.mjs',
    env: ({ failovers }) => ({ FAILOVERS: String(failovers) }),
  },
];

/** A line that states a result over the rounds: the PASS/FAIL verdicts and the cold bench's CPU ratio. */
const verdict = /^(PASS|FAIL)\b|^HTTP thread CPU per call\b/;
/** The first line of the failover bench's summary of one topology; the summary ends at a blank line. */
const failoverSummary = /^(cluster|sentinel): \d+ failovers\b/;

/**
 * The summary lines of one bench's whole output (a string), in order: verdict lines, and each failover
 * summary block from its first line to the blank line after it.
 */
export function summaryLines(output) {
  const kept = [];
  let inBlock = false;
  for (const line of output.split(/\r?\n/)) {
    if (inBlock) {
      if (line.trim() === '') inBlock = false;
      else kept.push(line);
    } else if (failoverSummary.test(line)) {
      inBlock = true;
      kept.push(line);
    } else if (verdict.test(line)) kept.push(line);
  }
  return kept;
}

/**
 * What a bench's source must still print for its summary to be found: a `PASS`/`FAIL` verdict (cold and
 * instances) or the failover summary's first line. Returns what is missing, or undefined.
 */
export function missingMarker(name, source) {
  if (name === 'failover')
    return /failovers, \$\{PROCESSES\} processes/.test(source)
      ? undefined
      : 'the "<topology>: N failovers" summary line';
  return /'PASS'\s*:\s*'FAIL'|\? 'PASS' : 'FAIL'/.test(source) ? undefined : 'a PASS/FAIL verdict line';
}
