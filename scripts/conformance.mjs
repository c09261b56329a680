#!/usr/bin/env node
// `pnpm conformance`: builds what the conformance suite runs (the suite and the packages it depends on,
// not the docs site), saying so, then runs it against the embedded mock. Arguments are passed on.
import { spawnSync } from 'node:child_process';

const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1', REDOCLY_TELEMETRY: 'off' };
console.log(
  '▶ building @partner-lending/conformance and the packages it needs (turbo; cached after the first run)…',
);
const started = performance.now();
const build = spawnSync(
  'pnpm',
  ['exec', 'turbo', 'run', 'build', '--filter=@partner-lending/conformance...', '--output-logs=errors-only'],
  { stdio: ['ignore', 'ignore', 'inherit'], env },
);
if (build.status !== 0) {
  console.error('✖ the build failed; run `pnpm build` to see why.');
  process.exit(build.status ?? 1);
}
console.log(
  `  built in ${((performance.now() - started) / 1000).toFixed(1)} s\n▶ partner-conformance against the embedded mock\n`,
);
const suite = spawnSync(
  process.execPath,
  ['packages/conformance/bin/partner-conformance.js', ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    env,
  },
);
process.exit(suite.status ?? 1);
