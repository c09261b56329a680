import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPlan } from '../src/plan/plan.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { api, type CreatedRun, journeyEnv, runCommand } from './support/service.js';

// Correct partner programs on mainstream OAuth libraries at their defaults certify through the hosted
// service under the vendor's default plan, as partners run them (a partner of their own, a certification
// run, the partner guide's environment variables): openid-client 6 (clientCredentialsGrant and a small
// cache), oauth4webapi 3, @badgateway/oauth2-client 3 (OAuth2Fetch), simple-oauth2 5, the SDK's own journey
// (the conformance package's examples/journey.mjs, as shipped: no JOURNEY_SECONDS, it ends when its work
// is done) and Python's Authlib. Each is PASS and approvable with every scenario played and handled (so
// each was given the chance to fail it) and every operation succeeded. Not vacuous: each new library's
// journey with one rule broken (FAULT=…) is FAIL, not approvable, its check named; the SDK's example
// stopped at 12 s is not approvable, token reuse not verified. The Python interpreter with Authlib is
// PARTNER_TEST_PYTHON (which `pnpm test` sets to the venv `pnpm prerequisites --install` made), default python3.
const clients = fileURLToPath(new URL('../../conformance/test/clients/', import.meta.url));
const sdkJourney = fileURLToPath(new URL('../../conformance/examples/journey.mjs', import.meta.url));
const python = process.env.PARTNER_TEST_PYTHON ?? 'python3';
const node = process.execPath;

function need(what: string, command: string, args: string[], install: string): void {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 30_000 });
  } catch {
    throw new Error(`${what} is missing: ${install} (pnpm prerequisites --install installs it)`);
  }
}

interface Journey {
  name: string;
  command: string;
  args: string[];
  /** Run as shipped: no JOURNEY_SECONDS (the SDK's example stops when the plan has seen all it judges). */
  asShipped?: boolean;
}

const correct: Journey[] = [
  { name: 'openid-client', command: node, args: [`${clients}openid-client-journey.mjs`] },
  { name: 'oauth4webapi', command: node, args: [`${clients}oauth4webapi-journey.mjs`] },
  { name: 'OAuth2Fetch', command: node, args: [`${clients}oauth2fetch-journey.mjs`] },
  { name: 'simple-oauth2', command: node, args: [`${clients}simple-oauth2-journey.mjs`] },
  { name: 'SDK', command: node, args: [sdkJourney], asShipped: true },
  { name: 'Authlib', command: python, args: [`${clients}authlib-journey.py`] },
];
// One rule broken in each new library's journey: the check deciding its scenario.
const faulty = [
  {
    journey: correct[0]!,
    fault: 'keep-revoked',
    check: 'client-revocation-recovery',
    scenario: 'revocation',
  },
  {
    journey: correct[1]!,
    fault: 'ignore-scope',
    check: 'client-granted-scope-respected',
    scenario: 'narrowed-grant',
  },
  {
    journey: correct[2]!,
    fault: 'ignore-scope',
    check: 'client-granted-scope-respected',
    scenario: 'narrowed-grant',
  },
] as const;

/** At most `limit` of `tasks` at a time, results in order. */
async function pooled<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

describe('correct clients on mainstream OAuth libraries, through the hosted service under the default plan', () => {
  let svc: InProcessService;
  beforeAll(async () => {
    need(
      'Authlib for Python',
      python,
      ['-c', 'import authlib, requests'],
      'pip install authlib requests (then PARTNER_TEST_PYTHON=that python)',
    );
    svc = await inProcessService();
  });
  afterAll(async () => {
    await svc?.close();
  });

  /** One journey in a certification run of a partner of its own (open runs are limited per partner). */
  async function certify(journey: Journey, fault = '', seconds?: string) {
    const label = `${journey.name}${fault ? ` FAULT=${fault}` : ''}${seconds ? ` JOURNEY_SECONDS=${seconds}` : ''}`;
    const partner = await svc.partner(`Library ${label}`);
    const created = await api(svc.service.url, partner.apiKey, 'POST', '/api/runs', {
      certify: true,
      integration: { name: label, version: '1' },
    });
    expect(created.status, label).toBe(201);
    const run = created.json() as CreatedRun;
    const ran = await runCommand(journey.command, journey.args, {
      env: {
        ...journeyEnv(run),
        JOURNEY_SECONDS: seconds ?? (journey.asShipped ? undefined : '22'),
        ...(fault && { FAULT: fault }),
      },
      timeoutMs: 90_000,
    });
    await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {
      journeyExitCode: ran.code,
    });
    const judged = (await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${run.id}`)).json();
    return { label, ran, judged };
  }

  it('certifies each correct client (PASS, approvable, every scenario handled, every operation succeeded) and fails each new library with one rule broken, its check named', async () => {
    // Five at a time: a busy 2-core machine keeps every journey inside its plan's timing.
    const results = await pooled(5, [
      ...correct.map((journey) => () => certify(journey)),
      ...faulty.map((item) => () => certify(item.journey, item.fault)),
      // The SDK's example stopped at 12 s (its old default), before any long-lived token.
      () => certify(correct[4]!, '', '12'),
    ]);
    const passes = results.slice(0, correct.length);
    const failures = results.slice(correct.length, correct.length + faulty.length);
    const stoppedEarly = results.at(-1)!;
    for (const { label, ran, judged } of passes) {
      const context = `${label} (exit ${ran.code}; ${ran.stderr.slice(-400)}): ${JSON.stringify(judged.notApprovable)}`;
      expect(judged.plan.id, label).toBe(defaultPlan.id);
      expect(ran.code, context).toBe(0);
      // The example ran at its default and ended by itself, its work done (not at its 60-s bound).
      if (label === 'SDK') expect(ran.stdout, context).toMatch(/over [\d.]+ s \(done\)/);
      expect(judged.notApprovable, context).toEqual([]);
      expect(judged.verdict, context).toBe('PASS');
      expect(judged.approvable, context).toBe(true);
      for (const scenario of judged.coverage.scenarios)
        expect(scenario, `${label}: ${scenario.id}`).toMatchObject({
          played: true,
          met: true,
          outcome: 'handled',
        });
      expect(judged.coverage.operations, label).toHaveLength(defaultPlan.operations.length);
      for (const operation of judged.coverage.operations)
        expect(operation.succeeded, `${label}: ${operation.operationId}`).toBeGreaterThan(0);
    }
    failures.forEach(({ label, judged }, index) => {
      const { check, scenario } = faulty[index]!;
      const context = `${label}: ${JSON.stringify(judged.notApprovable)}`;
      expect(judged.verdict, context).toBe('FAIL');
      expect(judged.approvable, context).toBe(false);
      expect(judged.notApprovable, context).toContainEqual(
        expect.stringMatching(new RegExp(`^decisive-check-failed: ${check} — \\S`)),
      );
      expect(
        judged.coverage.scenarios.find((item: { id: string }) => item.id === scenario),
        context,
      ).toMatchObject({ played: true, met: false, outcome: 'not-handled' });
      // Exactly its rule: every other scenario was handled.
      for (const other of judged.coverage.scenarios)
        if (other.id !== scenario) expect(other.outcome, `${context} ${other.id}`).toBe('handled');
    });
    // Control: what the example's own end (its work done) buys: stopped at 12 s, every scenario was
    // handled, but token reuse, judged on the tokens issued after the plan's 15-s short phase, never showed.
    {
      const { label, ran, judged } = stoppedEarly;
      const context = `${label}: ${JSON.stringify(judged.notApprovable)}`;
      expect(ran.stdout, context).toMatch(/stopped at JOURNEY_SECONDS=12/);
      expect(judged.verdict, context).toBe('FAIL');
      expect(judged.approvable, context).toBe(false);
      expect(judged.notApprovable, context).toEqual([
        'the verdict is FAIL, not PASS',
        expect.stringMatching(/^decisive-check-not-verified: client-token-reuse — /),
      ]);
    }
  }, 240_000);
});
