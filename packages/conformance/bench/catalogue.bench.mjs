// Speed of the whole catalogue against the embedded mock (run with `pnpm bench`; it prints figures and
// asserts nothing). Uses the built package, so `turbo run bench` builds first. The expiry check is skipped
// by design here (12 h tokens, 20 s wait budget): the figures exclude any expiry wait.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runConformance } from '../dist/index.js';

const runs = Number(process.env.BENCH_RUNS ?? 3);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;

async function timed(options) {
  const started = performance.now();
  const report = await runConformance(options);
  const bad = report.checks.filter(
    (c) => c.severity === 'must' && (c.status === 'failed' || c.status === 'errored'),
  );
  if (bad.length > 0) throw new Error(`the mock failed ${bad.map((c) => c.id).join(', ')}`);
  return performance.now() - started;
}

async function compare(label, options) {
  const concurrent = [];
  const sequential = [];
  for (let i = 0; i < runs; i += 1) {
    concurrent.push(await timed(options));
    // Baseline measured in the same run: the same catalogue, one check at a time.
    sequential.push(await timed({ ...options, concurrency: 1 }));
  }
  const c = median(concurrent);
  const s = median(sequential);
  console.log(
    `${label}: concurrency 8 ${seconds(c)}, concurrency 1 (baseline) ${seconds(s)}, ratio ${(c / s).toFixed(2)} (medians of ${runs})`,
  );
}

// Warm up once: the attacker keys of the forged tokens are made once per process.
await timed({});
await compare('embedded mock, in process', {});
// A remote-like target: the same mock behind 20 ms of latency per request (an injected fetch). This is
// where concurrency pays: the local mock alone is CPU-bound in the same thread as the suite.
const latency = (input, init) =>
  new Promise((resolve) => setTimeout(resolve, 20)).then(() => fetch(input, init));
await compare('embedded mock + 20 ms latency per request', { fetch: latency });

// The CLI end to end, as a user runs it: process start, mock start, every check, report printed.
const bin = fileURLToPath(new URL('../bin/partner-conformance.js', import.meta.url));
const cli = [];
for (let i = 0; i < runs; i += 1) {
  const started = performance.now();
  const result = spawnSync(process.execPath, [bin], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  cli.push(performance.now() - started);
  if (result.status !== 0) throw new Error(`partner-conformance exited ${result.status}: ${result.stderr}`);
}
console.log(
  `partner-conformance CLI wall, embedded mock: ${seconds(median(cli))} (median of ${runs}; target < 5 s)`,
);
