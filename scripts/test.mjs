#!/usr/bin/env node
// The README's test command (`pnpm test`): lint, typecheck, spec lint, the generated-file drift check,
// build, then every vitest project in one run. Ends with a plain `N passed, N failed` line counted
// from vitest's JSON report, whatever happened before, so CI logs always close with the count.
//
// PARTNER_TEST_NODES (paths of other `node` binaries, separated by spaces; `.ci/run` sets it to
// Node 22 and 24) runs the packages partners install — auth, sdk and token-store-redis, their
// packed-tarball tests included — once more under each of them, after the main run. Each run prints
// its own closing line; the last line then sums every run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { authlibPython, missingFor, missingMessage, selectedProjects } from './prerequisites.mjs';

const env = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: '1',
  DO_NOT_TRACK: '1',
  FORCE_COLOR: process.env.FORCE_COLOR ?? '0',
};
const report = '.reports/vitest.json';
const extra = process.argv.slice(2);

// Before anything else: what the selected projects need from the machine (checked locally, in well
// under a second; never apt-get or the network). Missing pieces stop the run here, named, with the
// command that installs them, instead of failing suite after suite minutes later.
const wanted = selectedProjects(extra);
const missing = missingFor(wanted);
if (missing.length > 0) {
  console.error(missingMessage(missing, wanted));
  console.log('\n0 passed, 1 failed');
  process.exit(1);
}
// The interop bed's Python: the venv `pnpm prerequisites --install` made, unless one is named.
const python = env.PARTNER_TEST_PYTHON ?? authlibPython(env);
if (python) env.PARTNER_TEST_PYTHON = python;
/** The projects run again under every other Node version: what partners install. */
const matrixProjects = ['auth', 'sdk', 'token-store-redis'];
const otherNodes = (process.env.PARTNER_TEST_NODES ?? '').split(/\s+/).filter(Boolean);

function run(title, command, args, runEnv = env) {
  console.log(`\n▶ ${title}: ${[command, ...args].join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: runEnv });
  return result.status === 0;
}

/** Every failed test of every run, named at the very end (a CI log's tail is often all one sees). */
const failures = [];

/** Counts from a vitest JSON report; a run that failed without a report counts as one failure. */
function count(file, succeeded, title) {
  const errorsFile = runErrorsFile(file);
  const runErrors = existsSync(errorsFile) ? JSON.parse(readFileSync(errorsFile, 'utf8')) : [];
  for (const error of runErrors) failures.push(`${title}: ${error}`);
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  if (existsSync(file)) {
    const json = JSON.parse(readFileSync(file, 'utf8'));
    for (const suite of json.testResults ?? []) {
      const where = suite.name.replace(`${process.cwd()}/`, '');
      if (
        suite.status === 'failed' &&
        !(suite.assertionResults ?? []).some((test) => test.status === 'failed')
      )
        failures.push(`${title}: ${where}: ${firstLine(suite.message)}`);
      for (const test of suite.assertionResults ?? [])
        if (test.status === 'failed')
          failures.push(`${title}: ${where} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`);
    }
    passed = json.numPassedTests ?? 0;
    failed = json.numFailedTests ?? 0;
    skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
    // Files that failed with no failed test inside (one that did not load, a hook that threw) count
    // as failures of their own.
    failed += (json.testResults ?? []).filter(
      (suite) =>
        suite.status === 'failed' && !(suite.assertionResults ?? []).some((test) => test.status === 'failed'),
    ).length;
  }
  if (!succeeded && failed === 0) {
    failed = 1;
    if (runErrors.length === 0)
      failures.push(
        `${title}: vitest exited non-zero with no failed test and no error it reported; see the log above`,
      );
  }
  if (passed === 0 && failed === 0) {
    console.error('✖ no test ran.');
    failed = 1;
  }
  return { passed, failed, skipped, ok: succeeded && failed === 0 };
}

function firstLine(text) {
  return (
    String(text ?? '')
      .split('\n')
      .find((item) => item.trim() !== '')
      ?.trim()
      .slice(0, 300) ?? ''
  );
}

/** Where the run-errors reporter writes for the run whose JSON report is `file`. */
const runErrorsFile = (file) => file.replace(/\.json$/, '.errors.json');
/** The reporters of every run: the console, the JSON report, and what failed outside any test. */
const reporters = (file) => [
  '--reporter=default',
  '--reporter=json',
  '--reporter=./scripts/reporters/run-errors.mjs',
  `--outputFile.json=${file}`,
];

const line = ({ passed, failed, skipped }) =>
  `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;

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

const totals = { passed: 0, failed: 0, skipped: 0 };
const add = (result) => {
  totals.passed += result.passed;
  totals.failed += result.failed;
  totals.skipped += result.skipped;
};
if (ok) {
  mkdirSync('.reports', { recursive: true });
  rmSync(report, { force: true });
  rmSync(runErrorsFile(report), { force: true });
  const tests = run(
    'tests (vitest, every project)',
    'pnpm',
    ['exec', 'vitest', 'run', ...reporters(report), ...extra],
    { ...env, PARTNER_RUN_ERRORS: runErrorsFile(report) },
  );
  const main = count(report, tests, `Node ${process.version}`);
  add(main);
  ok = main.ok;
  const summaries = [`Node ${process.version} (every project): ${line(main)}`];
  if (otherNodes.length > 0) console.log(`\n${summaries[0]}`);
  const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
  for (const node of otherNodes) {
    const probe = spawnSync(node, ['--version'], { encoding: 'utf8' });
    if (probe.status !== 0) {
      console.error(
        `\n✖ PARTNER_TEST_NODES names ${node}, which does not run (${probe.error?.message ?? probe.stderr}).`,
      );
      add({ passed: 0, failed: 1, skipped: 0 });
      summaries.push(`${node}: did not run`);
      ok = false;
      continue;
    }
    const version = probe.stdout.trim();
    const file = `.reports/vitest-node-${version}.json`;
    rmSync(file, { force: true });
    rmSync(runErrorsFile(file), { force: true });
    // Its directory first on PATH, so that every `node` the tests start (workers, consumers of the
    // packed tarballs, npm and pnpm themselves) is this version too.
    const succeeded = run(
      `tests under Node ${version} (${matrixProjects.join(', ')})`,
      node,
      [vitest, 'run', ...matrixProjects.flatMap((project) => ['--project', project]), ...reporters(file)],
      {
        ...env,
        PARTNER_RUN_ERRORS: runErrorsFile(file),
        PATH: `${dirname(node)}${delimiter}${env.PATH ?? ''}`,
      },
    );
    const result = count(file, succeeded, `Node ${version}`);
    add(result);
    ok = ok && result.ok;
    summaries.push(`Node ${version} (${matrixProjects.join(', ')}): ${line(result)}`);
    console.log(`\n${summaries.at(-1)}`);
  }
  if (otherNodes.length > 0) console.log(`\n${summaries.join('\n')}`);
} else {
  totals.failed = 1;
}
if (failures.length > 0) console.log(`\nFailed:\n${failures.map((item) => `  ✖ ${item}`).join('\n')}`);
console.log(`\n${line(totals)}`);
process.exit(ok ? 0 : 1);
