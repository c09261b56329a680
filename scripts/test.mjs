#!/usr/bin/env node
// The README's test command (`pnpm test`): lint, typecheck, spec lint, the generated-file drift check,
// build, then every vitest project in one run. Ends with a plain `N passed, N failed` line counted
// from vitest's JSON report, whatever happened before, so CI logs always close with the count.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';

const env = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: '1',
  DO_NOT_TRACK: '1',
  FORCE_COLOR: process.env.FORCE_COLOR ?? '0',
};
const report = '.reports/vitest.json';
const extra = process.argv.slice(2);

function run(title, command, args) {
  console.log(`\n▶ ${title}: ${[command, ...args].join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env });
  return result.status === 0;
}

const steps = [
  ['lint and format (Biome)', 'pnpm', ['exec', 'biome', 'check', '.']],
  [
    'spec lint, drift check of generated files, typecheck',
    'pnpm',
    ['exec', 'turbo', 'run', 'lint:spec', 'check:generated', 'typecheck', '--output-logs=errors-only'],
  ],
  ['build', 'pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']],
];

let ok = true;
for (const [title, command, args] of steps) {
  if (!run(title, command, args)) {
    console.error(`\n✖ ${title} failed; the tests were not run.`);
    ok = false;
    break;
  }
}

let passed = 0;
let failed = 0;
let skipped = 0;
if (ok) {
  mkdirSync('.reports', { recursive: true });
  rmSync(report, { force: true });
  const tests = run('tests (vitest, every project)', 'pnpm', [
    'exec',
    'vitest',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...extra,
  ]);
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    passed = json.numPassedTests ?? 0;
    failed = json.numFailedTests ?? 0;
    skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
    // Suites that failed to load count as failures even when no test inside them ran.
    failed += (json.testResults ?? []).filter(
      (file) => file.status === 'failed' && file.assertionResults?.length === 0,
    ).length;
  }
  if (!tests && failed === 0) failed = 1;
  if (passed === 0 && failed === 0) {
    console.error('✖ no test ran.');
    failed = 1;
  }
  ok = tests && failed === 0;
} else {
  failed = 1;
}
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(ok ? 0 : 1);
