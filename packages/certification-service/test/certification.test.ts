import { parseEnvelope } from '@partner-lending/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePlan, recordDecision } from '../src/index.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import {
  api,
  type CreatedRun,
  journeyEnv,
  referenceClient,
  runCommand,
  runToken,
} from './support/service.js';

// Certification runs follow the vendor's plan; practice runs take overrides and are never approvable;
// coverage decides approvability; decisions are read through the API. On both stores.
let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
});

const token = (run: CreatedRun, scope: string) =>
  runToken(run, { scope }).then(
    (response) => response.json() as Promise<{ access_token: string; partnerId: string }>,
  );

describe.each(['embedded', 'postgres'] as const)(
  'certification plan and decisions on %s storage',
  (storage) => {
    let svc: InProcessService;
    let partner: { partnerId: string; apiKey: string };
    const plan = makePlan({ id: 'test-plan', ttlSeconds: 2 });
    beforeAll(async () => {
      svc = await inProcessService({
        plan,
        ...(storage === 'postgres' && { databaseUrl: await postgres.database(`cert_${Date.now()}`) }),
      });
      partner = await svc.partner('Plan Partner');
    }, 120_000);
    afterAll(() => svc?.close());

    const post = (body: unknown) => api(svc.service.url, partner.apiKey, 'POST', '/api/runs', body);

    it('a certification run refuses every field of the plan with a 400 that says the plan is the vendor’s; a practice run takes them', async () => {
      for (const field of [
        { scenarios: [] },
        { scopes: ['read:loans'] },
        { ttlSeconds: 3 },
        { longTtlSeconds: 900 },
      ]) {
        const refused = await post({ certify: true, ...field });
        expect(refused.status, JSON.stringify(field)).toBe(400);
        expect(refused.headers.get('content-type')).toBe('application/problem+json');
        const problem = refused.json();
        expect(problem.title).toBe('The plan is the vendor’s');
        expect(problem.detail).toContain(`"${Object.keys(field)[0]}"`);
        expect(problem.detail).toContain('test-plan');
      }
      // The control: the same fields on a practice run are taken.
      const practice = await post({ scenarios: [], ttlSeconds: 3 });
      expect(practice.status).toBe(201);
      expect(practice.json().kind).toBe('practice');
      expect(practice.json().ttlSeconds).toBe(3);
      const certification = await post({ certify: true });
      expect(certification.status).toBe(201);
      expect(certification.json()).toMatchObject({
        kind: 'certification',
        certificationPlan: { id: 'test-plan', digest: plan.digest },
        ttlSeconds: 2,
      });
      for (const run of [practice.json(), certification.json()])
        await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
    });

    it('a run is reached only at its address, a capability apart from its id: the id in its place is a 404, recorded nowhere', async () => {
      const run = (await post({ certify: true })).json() as CreatedRun;
      const address = new URL(run.tokenUrl).pathname.split('/')[2]!;
      expect(address).toMatch(/^ra_[A-Za-z0-9_-]{32}$/);
      expect(run.tokenUrl).not.toContain(run.id);
      const ask = (url: string) => runToken(run, {}, url);
      // The run's id where its address goes, the right credentials: nothing there.
      expect((await ask(`${svc.service.url}/runs/${run.id}/auth/oauth/token`)).status).toBe(404);
      // The control: at its address, the same request is answered.
      expect((await ask(run.tokenUrl)).status).toBe(200);
      const judged = (
        await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {})
      ).json();
      expect(judged.report.journey.calls.token).toBe(1);
    });

    it('under the default plan a correct client certifies on all four operations with the narrowed grant met, in one run, a third party hitting it without credentials notwithstanding; a token-per-call client asking for four scopes and one bursting after a 429 are not approvable', async () => {
      // A third party who learnt the correct client's addresses: wrong secrets, calls without a token
      // or with a made-up one, while the journey runs.
      const outsider = async (run: CreatedRun) => {
        for (let round = 0; round < 3; round += 1) {
          await new Promise((resolve) => setTimeout(resolve, 1500));
          const refused = await runToken(run, { client_secret: 'not-the-secret' });
          await refused.arrayBuffer();
          for (const authorization of [undefined, 'Bearer made.up.token']) {
            const call = await fetch(`${run.baseUrl}/v3/partner/anyone/loans`, {
              headers: authorization ? { authorization } : {},
            });
            await call.arrayBuffer();
          }
        }
      };
      const journey = async (extra: Record<string, string>, thirdParty = false) => {
        const run = (
          await post({ certify: true, integration: { name: 'ref', version: '1' } })
        ).json() as CreatedRun;
        const [ran] = await Promise.all([
          runCommand(process.execPath, [referenceClient], {
            env: { ...journeyEnv(run), JOURNEY_SECONDS: '12', ...extra },
            timeoutMs: 90_000,
          }),
          thirdParty ? outsider(run) : undefined,
        ]);
        await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {
          journeyExitCode: ran.code,
        });
        return (await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${run.id}`)).json();
      };
      const [correct, perCall, burst] = await Promise.all([
        journey({}, true),
        journey({ BUG: 'token-per-call', ASK_ALL: '1' }),
        journey({ BUG: 'burst-after-429' }),
      ]);
      expect(correct.notApprovable).toEqual([]);
      expect(correct.approvable).toBe(true);
      expect(correct.verdict).toBe('PASS');
      for (const operation of correct.coverage.operations)
        expect(operation.succeeded, operation.operationId).toBeGreaterThan(0);
      expect(correct.coverage.operations).toHaveLength(4);
      expect(
        correct.coverage.scenarios.find((item: { id: string }) => item.id === 'narrowed-grant').met,
      ).toBe(true);
      // The third party's traffic was recorded apart and swayed nothing.
      expect(correct.report.outsideTraffic.exchanges).toBeGreaterThanOrEqual(9);
      // Named in what is signed: the partner, the plan, the service.
      expect(correct.report.partner).toEqual({ id: partner.partnerId, name: 'Plan Partner' });
      expect(correct.report.plan).toEqual({ id: 'test-plan', digest: plan.digest });
      expect(correct.report.service.url).toBe(svc.service.url);
      const attestation = (
        await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${correct.id}/attestation`)
      ).text;
      const statement = JSON.parse(
        Buffer.from(parseEnvelope(attestation).payload, 'base64').toString('utf8'),
      );
      expect(JSON.stringify(statement.predicate)).toContain(partner.partnerId);
      // The controls: each faulty client is refused approval, with the decisive check named.
      expect(perCall.approvable).toBe(false);
      expect(perCall.notApprovable.join('\n')).toContain('client-token-reuse');
      expect(burst.approvable).toBe(false);
      expect(burst.notApprovable.join('\n')).toContain('client-retry-after');
      // The correct client handled every scenario its plan plays (played and judged apart).
      for (const scenario of correct.coverage.scenarios)
        expect(scenario, scenario.id).toMatchObject({ played: true, met: true, outcome: 'handled' });
    }, 240_000);

    it('scopes as one string is refused with a message that shows the array', async () => {
      const refused = await post({ scopes: 'read:loans create:loan_draft' });
      expect(refused.status).toBe(400);
      expect(refused.json().detail).toContain('["read:loans", "create:loan_draft"]');
      expect(refused.json().detail).not.toContain('Too big');
      const unknown = await post({ scopes: ['read:everything'] });
      expect(unknown.status).toBe(400);
      expect(unknown.json().detail).toContain('each scope is one of "read:loans"');
    });

    it('a practice run with scenarios [] and a certification run where only GET loans succeeded are not approvable, each with its reasons', async () => {
      const practice = (await post({ scenarios: [] })).json() as CreatedRun;
      const certification = (await post({ certify: true })).json() as CreatedRun;
      for (const run of [practice, certification]) {
        const issued = await token(run, 'read:loans');
        for (let i = 0; i < 3; i += 1) {
          const listed = await fetch(`${run.baseUrl}/v3/partner/${issued.partnerId}/loans?limit=5`, {
            headers: { authorization: `Bearer ${issued.access_token}` },
          });
          await listed.arrayBuffer();
        }
        await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {
          journeyExitCode: 0,
        });
      }
      const practiceView = (
        await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${practice.id}`)
      ).json();
      expect(practiceView.kind).toBe('practice');
      expect(practiceView.plan).toBeNull();
      expect(practiceView.approvable).toBe(false);
      expect(practiceView.notApprovable.join(' ')).toContain('practice run');
      expect(practiceView.partner).toEqual({ id: partner.partnerId, name: 'Plan Partner' });

      const view = (
        await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${certification.id}`)
      ).json();
      expect(view.plan).toEqual({ id: 'test-plan', digest: plan.digest });
      expect(view.approvable).toBe(false);
      const listLoans = view.coverage.operations.find(
        (item: { operationId: string }) => item.operationId === 'listLoans',
      );
      expect(listLoans.succeeded).toBeGreaterThan(0);
      const reasons = view.notApprovable.join('\n');
      for (const operation of ['createLoanDraft', 'createJournalUpdate', 'createRepayment'])
        expect(reasons).toContain(`operation-not-succeeded: ${operation}`);
      expect(reasons).not.toContain('operation-not-succeeded: listLoans');
      expect(reasons).toMatch(/^scenario-not-[a-z]+: narrowed-grant/m);
      expect(view.decision).toBeNull();
    });

    it('decisions: recorded in the caller’s transaction, a second identical one refused, a reversal taken, read through the API newest first', async () => {
      const run = (await post({ certify: true })).json() as CreatedRun;
      await api(svc.service.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
      const { reviewerId } = await svc.reviewer('Dana Decider');
      const decide = (decision: 'approved' | 'rejected', note: string) =>
        svc.db.transaction((tx) =>
          recordDecision(tx, {
            partnerId: partner.partnerId,
            runId: run.id,
            reviewerId,
            decision,
            note,
            scopes: [],
            validUntil: null,
          }),
        );
      const first = await decide('rejected', 'no journals');
      expect(first.id).toMatch(/^dec_/);
      await expect(decide('rejected', 'again')).rejects.toThrow(/already rejected/);
      const reversed = await decide('approved', 'fixed after a call');
      // A transaction that fails after recording leaves nothing behind.
      await expect(
        svc.db.transaction(async (tx) => {
          await recordDecision(tx, {
            partnerId: partner.partnerId,
            runId: run.id,
            reviewerId,
            decision: 'rejected',
            note: 'rolled back',
            scopes: [],
            validUntil: null,
          });
          throw new Error('the statement could not be signed');
        }),
      ).rejects.toThrow('could not be signed');
      const listed = (await api(svc.service.url, partner.apiKey, 'GET', '/api/decisions')).json();
      expect(listed.decisions.map((item: { id: string }) => item.id)).toEqual([reversed.id, first.id]);
      expect(listed.decisions[0]).toMatchObject({
        runId: run.id,
        decision: 'approved',
        reviewer: { name: 'Dana Decider' },
        note: 'fixed after a call',
        validUntil: null,
      });
      const view = (await api(svc.service.url, partner.apiKey, 'GET', `/api/runs/${run.id}`)).json();
      expect(view.decision).toMatchObject({ id: reversed.id, decision: 'approved' });
      // Another partner sees none of them (the control: the list above is this partner's).
      const other = await svc.partner('Other Partner');
      expect((await api(svc.service.url, other.apiKey, 'GET', '/api/decisions')).json()).toEqual({
        decisions: [],
      });
      expect((await api(svc.service.url, undefined, 'GET', '/api/decisions')).status).toBe(401);
      const document = (await api(svc.service.url, undefined, 'GET', '/openapi.json')).json();
      expect(document.paths['/api/decisions'].get.operationId).toBe('listDecisions');
    });
  },
);
