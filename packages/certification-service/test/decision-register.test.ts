import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPlan, planScopes } from '../src/plan/plan.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { approvableRun, ed25519Pem, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { reviewerForms } from './support/reviewer-forms.js';

// Decisions and the register agree, always: random sequences of approve / reject / revoke / expire /
// re-approve, each through the reviewer's own forms on one instance or another, and after every step
// the register (signed, as a production gate reads it), GET /api/decisions, the partners page, the
// partner's production page and the webhook events all say what a model of the rule says.
//
// The rule: an approval opens production until it is revoked or expires, or a newer approval replaces
// it; a rejection judges a run and never ends an approval — rejecting the run the standing approval
// rests on is refused (409), pointing to Revoke.

type Status = 'none' | 'active' | 'revoked' | 'expired';
type Action =
  | { kind: 'approve'; run: number; on: number }
  | { kind: 'reject'; run: number; on: number }
  | { kind: 'revoke'; on: number }
  | { kind: 'expire'; on: number };

/** The rule as a model: what each step should do, and what production should then say. */
class Model {
  status: Status = 'none';
  standingRun: number | undefined;
  /** The latest decision on each run (a decision is recorded again only when it reverses the last). */
  latest = new Map<number, string>();
  rejections = 0;
  apply(action: Action): 'recorded' | 'refused' {
    if (action.kind === 'approve') {
      if (this.latest.get(action.run) === 'approved') return 'refused';
      this.latest.set(action.run, 'approved');
      this.status = 'active';
      this.standingRun = action.run;
      return 'recorded';
    }
    if (action.kind === 'reject') {
      if (this.status === 'active' && this.standingRun === action.run) return 'refused';
      if (this.latest.get(action.run) === 'rejected') return 'refused';
      this.latest.set(action.run, 'rejected');
      this.rejections += 1;
      return 'recorded';
    }
    if (this.status !== 'active') return 'refused';
    this.latest.set(this.standingRun!, action.kind === 'revoke' ? 'revoked' : 'expired');
    this.status = action.kind === 'revoke' ? 'revoked' : 'expired';
    this.standingRun = undefined;
    return 'recorded';
  }
}

const runs = 3;
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('approve' as const), run: fc.nat(runs - 1), on: fc.nat(1) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('reject' as const), run: fc.nat(runs - 1), on: fc.nat(1) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), on: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), on: fc.nat(1) }) },
);

const stores: Array<['embedded' | 'postgres']> = [['embedded'], ['postgres']];

describe.each(stores)('decisions and the register on the %s store', (store) => {
  let postgres: ThrowawayPostgres | undefined;
  /** Two instances sharing PostgreSQL; on the embedded store, one (it is one process's). */
  let instances: InProcessService[] = [];
  let readerKey: string;
  let credential: string;
  let reviewerName: string;
  beforeAll(async () => {
    const production = { registerMaxAgeSeconds: 60, expiryNoticeDays: 0 };
    if (store === 'postgres') {
      postgres = await startPostgres();
      const databaseUrl = await postgres.database('decisions');
      const keyFile = join(tmpdir(), `pcs-decisions-${process.pid}.pem`);
      writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
      for (let i = 0; i < 2; i += 1)
        instances.push(
          await inProcessService({ databaseUrl, keyFile, sweepIntervalMs: 3_600_000, production }),
        );
    } else instances = [await inProcessService({ sweepIntervalMs: 3_600_000, production })];
    reviewerName = 'Rita';
    ({ credential } = await instances[0]!.reviewer(reviewerName));
    ({ key: readerKey } = await addRegisterReader(instances[0]!.db, 'production token endpoint'));
  }, 120_000);
  afterAll(async () => {
    for (const instance of instances) await instance.close();
    await postgres?.stop();
  });

  const instance = (on: number) => instances[on % instances.length]!;

  /** The partner's register entry as a gate reads it (its seq must only grow). */
  async function registerEntry(url: string, partnerId: string) {
    const answer = await fetch(`${url}/register/partners/${partnerId}`, {
      headers: { authorization: `Bearer ${readerKey}` },
    });
    if (answer.status === 404)
      return { status: 'none' as Status, scopes: [] as string[], decisionId: undefined, seq: undefined };
    expect(answer.status).toBe(200);
    const payload = JSON.parse(
      Buffer.from((await answer.text()).split('.')[1]!, 'base64url').toString('utf8'),
    );
    const [entry] = payload.partners as Array<{
      status: Status;
      scopes: string[];
      decisionId: string | undefined;
    }>;
    return { ...entry!, seq: payload.seq as number };
  }

  /** Everything production and reviewers read about the partner, from one instance. */
  async function observe(on: number, partner: { partnerId: string; apiKey: string }) {
    const { url } = instance(on).service;
    const forms = await reviewerForms(url, credential);
    const register = await registerEntry(url, partner.partnerId);
    const api = (await (
      await fetch(`${url}/api/decisions`, { headers: { authorization: `Bearer ${partner.apiKey}` } })
    ).json()) as {
      decisions: Array<{ id: string; decision: string; runId: string }>;
      production: { status: Status; decisionId: string; scopes: string[] } | null;
    };
    const list = (await forms.get('/ui/partners')).text;
    const row = list.slice(list.indexOf(`data-partner="${partner.partnerId}"`));
    const listed = /data-production="([a-z]+)"/.exec(row)?.[1];
    const productionPage = (await forms.get(`/ui/partners/${partner.partnerId}/production`)).text;
    const shown = /Production: <strong[^>]*>([a-z]+)</.exec(productionPage)?.[1] ?? 'none';
    const events = await instance(on).db.query<{ type: string }>(
      'SELECT type FROM webhook_events WHERE partner_id = $1 ORDER BY seq',
      [partner.partnerId],
    );
    return { register, api, listed, shown, events: events.map((event) => event.type) };
  }

  it('agree after every step of random sequences, on any instance', async () => {
    let lastSeq = 0;
    const tally = { recorded: 0, refused: 0, inForce: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 4, maxLength: 12 }), async (actions) => {
        const partner = await instance(0).partner(`Partner ${Math.random().toString(36).slice(2, 8)}`);
        const runIds: string[] = [];
        for (let i = 0; i < runs; i += 1) runIds.push(await approvableRun(instance(0).db, partner.partnerId));
        const model = new Model();
        for (const step of actions) {
          const { url } = instance(step.on).service;
          const forms = await reviewerForms(url, credential);
          const inForce =
            step.kind === 'reject' && model.status === 'active' && model.standingRun === step.run;
          const expected = model.apply(step);
          tally[expected] += 1;
          if (inForce) tally.inForce += 1;
          let status: number;
          if (step.kind === 'approve' || step.kind === 'reject') {
            const runPage = `/ui/runs/${runIds[step.run]}`;
            const answer = await forms.post(runPage, `${runPage}/decision`, {
              decision: step.kind === 'approve' ? 'approved' : 'rejected',
              note: `${step.kind} ${step.run}`,
            });
            status = answer.status;
            // The page offers no Reject on the run the approval rests on, and says where to revoke.
            if (inForce) expect(answer.text).toContain('Revoke it there');
          } else if (step.kind === 'revoke') {
            const page = `/ui/partners/${partner.partnerId}/production`;
            const offered = (await forms.get(page)).text.includes('value="revoked"');
            expect(offered, 'Revoke offered only to an active partner').toBe(expected === 'recorded');
            status = offered
              ? (
                  await forms.post(page, `/ui/partners/${partner.partnerId}/revoke`, {
                    decision: 'revoked',
                    note: 'revoke',
                  })
                ).status
              : 409;
          } else {
            // An approval reaching its validUntil, then a sweep by this instance.
            await instance(step.on).db.query(
              `UPDATE decisions SET valid_until = now() - interval '1 second'
               WHERE partner_id = $1 AND decision = 'approved' AND valid_until > now()`,
              [partner.partnerId],
            );
            const swept = await instance(step.on).service.production.sweep();
            status = swept.expired > 0 ? 303 : 409;
          }
          expect(status, `${JSON.stringify(step)} on ${JSON.stringify(actions)}`).toBe(
            expected === 'recorded' ? 303 : 409,
          );
          // Read from the other instance (or the same one on the embedded store).
          const seen = await observe(step.on + 1, partner);
          const context = `after ${JSON.stringify(step)} of ${JSON.stringify(actions)}`;
          expect(seen.register.status, `register ${context}`).toBe(model.status);
          expect(seen.api.production?.status ?? 'none', `GET /api/decisions ${context}`).toBe(model.status);
          expect(seen.listed, `partners page ${context}`).toBe(model.status);
          expect(seen.shown, `production page ${context}`).toBe(model.status);
          if (model.status === 'active') {
            expect(seen.register.scopes).toEqual(planScopes(defaultPlan).sort());
            expect(seen.api.production!.decisionId).toBe(seen.register.decisionId);
            expect(seen.api.decisions.find((item) => item.id === seen.register.decisionId)?.runId).toBe(
              runIds[model.standingRun!],
            );
          }
          if (seen.register.seq !== undefined) {
            expect(seen.register.seq, `register seq ${context}`).toBeGreaterThanOrEqual(lastSeq);
            lastSeq = seen.register.seq;
          }
          // The webhooks: the last production event says the same; every rejection recorded was announced.
          const production = seen.events.filter((type) =>
            ['partner.approved', 'partner.revoked', 'approval.expired'].includes(type),
          );
          const last = production.at(-1);
          expect(
            last === undefined
              ? 'none'
              : (
                  {
                    'partner.approved': 'active',
                    'partner.revoked': 'revoked',
                    'approval.expired': 'expired',
                  } as Record<string, Status>
                )[last],
            `webhooks ${context}: ${seen.events.join(', ')}`,
          ).toBe(model.status);
          expect(seen.events.filter((type) => type === 'partner.rejected')).toHaveLength(model.rejections);
        }
      }),
      {
        numRuns: store === 'postgres' ? 8 : 12,
        endOnFailure: true,
        // Always tried, beside the random ones: a rejection of the approved run refused, rejections of
        // other runs recorded, revoke, re-approval, expiry, each on both instances.
        examples: [
          [
            [
              { kind: 'approve', run: 0, on: 0 },
              { kind: 'reject', run: 0, on: 1 },
              { kind: 'reject', run: 1, on: 0 },
              { kind: 'revoke', on: 1 },
              { kind: 'reject', run: 0, on: 0 },
              { kind: 'approve', run: 0, on: 1 },
              { kind: 'approve', run: 2, on: 0 },
              { kind: 'reject', run: 0, on: 1 },
              { kind: 'expire', on: 0 },
              { kind: 'revoke', on: 1 },
              { kind: 'approve', run: 2, on: 1 },
            ],
          ],
        ],
      },
    );
    // Not vacuous: decisions were recorded and refused, the in-force rejection among the refusals.
    expect(tally.recorded).toBeGreaterThan(10);
    expect(tally.refused).toBeGreaterThan(3);
    expect(tally.inForce).toBeGreaterThan(0);
  }, 600_000);

  it('the model refuses what the service must refuse (negative control of the property)', () => {
    const model = new Model();
    expect(model.apply({ kind: 'reject', run: 0, on: 0 })).toBe('recorded');
    expect(model.apply({ kind: 'approve', run: 0, on: 0 })).toBe('recorded');
    expect(model.apply({ kind: 'reject', run: 0, on: 0 })).toBe('refused');
    expect(model.apply({ kind: 'reject', run: 1, on: 0 })).toBe('recorded');
    expect(model.status).toBe('active');
    expect(model.apply({ kind: 'revoke', on: 0 })).toBe('recorded');
    expect(model.apply({ kind: 'revoke', on: 0 })).toBe('refused');
    expect(model.apply({ kind: 'reject', run: 0, on: 0 })).toBe('recorded');
    expect(model.status).toBe('revoked');
  });
});
