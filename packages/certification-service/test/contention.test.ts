import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admin,
  api,
  type CreatedRun,
  curlJourney,
  journeyEnv,
  referenceClient,
  runCommand,
  type ServeProcess,
  startServe,
} from './support/service.js';

// A partner's CI runner is a busy machine: a correct journey's verdict must not turn on how fast it
// was. Here two more processes than the machine has cores spin the whole time the service serves and
// the journey runs, and the journey must still certify under the vendor's default plan.

/** Processes that spin a core each until stopped (and at most `seconds`, should the test die). */
function spinners(count: number, seconds: number): ChildProcess[] {
  return Array.from({ length: count }, () =>
    spawn(
      process.execPath,
      ['-e', `const end = Date.now() + ${seconds * 1000}; while (Date.now() < end) {}`],
      { stdio: 'ignore' },
    ),
  );
}

describe('under CPU contention', () => {
  let dir: string;
  let service: ServeProcess;
  let apiKey: string;
  let spinning: ChildProcess[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-contention-'));
    apiKey = (await admin('add-partner', 'Busy Runner Lending', { cwd: dir })).apiKey!;
    service = await startServe({ cwd: dir });
  });
  afterAll(async () => {
    for (const child of spinning) child.kill('SIGKILL');
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['the shipped curl journey', 'sh', curlJourney],
    ['the reference client (two workers)', process.execPath, referenceClient],
  ])('%s certifies (PASS, approvable) while every core is busy', async (_name, command, script) => {
    const created = await api(service.url, apiKey, 'POST', '/api/runs', {
      certify: true,
      integration: { name: 'busy-runner', version: '1.0.0' },
    });
    expect(created.status).toBe(201);
    const run = created.json() as CreatedRun;
    spinning = spinners(availableParallelism() + 2, 120);
    let alive = 0;
    try {
      const journey = await runCommand(command, [script], {
        env: { ...journeyEnv(run), JOURNEY_SECONDS: '24' },
        timeoutMs: 100_000,
      });
      alive = spinning.filter((child) => child.exitCode === null && child.signalCode === null).length;
      expect(journey.stderr).toBe('');
      expect(journey.code).toBe(0);
    } finally {
      for (const child of spinning) child.kill('SIGKILL');
    }
    // Not vacuous: the spinners spun the whole journey long, and the journey did everything.
    expect(alive).toBe(spinning.length);
    const finished = await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
      journeyExitCode: 0,
    });
    expect(finished.status).toBe(200);
    const body = finished.json();
    const notPassed = body.report.checks
      .filter((check: { status: string }) => check.status !== 'passed')
      .map(
        (check: { id: string; status: string; details: string }) =>
          `${check.id} ${check.status}: ${check.details}`,
      );
    expect({ verdict: body.verdict, notApprovable: body.notApprovable, notPassed }).toMatchObject({
      verdict: 'PASS',
      notApprovable: [],
    });
    expect(body.approvable).toBe(true);
    for (const operation of body.report.operations as Array<{ operationId: string; successes: number }>)
      expect(operation.successes, operation.operationId).toBeGreaterThan(0);
  });
});
