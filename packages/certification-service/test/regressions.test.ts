import { createHash, verify } from 'node:crypto';
import { type DsseEnvelope, inTotoPayloadType, keysOf, preAuthEncoding } from '@partner-lending/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exchange } from '../src/evidence/exchange.js';
import { defaultPlan, planScopes } from '../src/plan/plan.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { addWebhook } from '../src/production/webhooks/admin.js';
import type { RegressionFinding } from '../src/regressions/finding.js';
import { regressionsRecorded } from '../src/regressions/metrics.js';
import { recordRegression } from '../src/regressions/record.js';
import { type RegressionStatement, regressionPredicateType } from '../src/regressions/statement.js';
import { secretsKeyFrom } from '../src/secrets.js';
import { approvableRun, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { type Receiver, startReceiver } from './support/receiver.js';
import { reviewerForms } from './support/reviewer-forms.js';

// Regressions and their consequences, on both stores: a finding of the production judge is recorded
// with a signed statement, an audit line, a metric and `partner.regressed` (delivered to a real
// receiver); under `suspend` the register says `suspended` with a higher seq and `partner.suspended`
// leaves, until a new approval reinstates (`partner.reinstated`); under `notify` the partner stays
// active. Every positive step has its control.

let windowStart = Date.UTC(2026, 10, 1);
/** A finding as the production judge hands one over, on a window of its own. */
function finding(partnerId: string, overrides: Partial<RegressionFinding> = {}): RegressionFinding {
  windowStart += 3_600_000;
  const from = windowStart;
  const exchanges: Exchange[] = [0, 1, 2].map((i) => ({
    at: from + i * 1000,
    partnerId,
    kind: 'token',
    method: 'POST',
    path: '/oauth/token',
    status: 200,
    fingerprint: `fp_${i}_${partnerId.slice(-6)}`,
    scopesGranted: ['loans:read'],
    expiresAt: from + 3_600_000,
    reporterId: 'rep_gateway',
  }));
  return {
    check: 'client-token-reuse',
    partnerId,
    at: from + 10_000,
    detail:
      'three tokens requested within 2 s while the first was valid for an hour <script>alert(1)</script>',
    exchanges,
    window: { from, to: from + 60_000 },
    ...overrides,
  };
}

/** Verifies a DSSE envelope against a JWKS: the statement, or an Error saying why not. */
function verifyEnvelope(envelope: DsseEnvelope, jwks: unknown): RegressionStatement {
  const keys = keysOf(jwks);
  const payload = Buffer.from(envelope.payload, 'base64');
  const signed = envelope.signatures.some((signature) => {
    const key = keys.find((item) => item.kid === signature.keyid);
    return (
      key !== undefined &&
      verify(
        key.alg === 'EdDSA' ? null : 'sha256',
        preAuthEncoding(envelope.payloadType, payload),
        key.alg === 'EdDSA' ? key.key : { key: key.key, dsaEncoding: 'ieee-p1363' },
        Buffer.from(signature.sig, 'base64'),
      )
    );
  });
  if (!signed || envelope.payloadType !== inTotoPayloadType)
    throw new Error('the envelope is not signed by a key of the JWKS');
  return JSON.parse(payload.toString('utf8')) as RegressionStatement;
}

const counted = async (consequence: string) =>
  (await regressionsRecorded.get()).values
    .filter(
      (value) => value.labels.consequence === consequence && value.labels.check === 'client-token-reuse',
    )
    .reduce((sum, value) => sum + value.value, 0);

const stores: Array<['embedded' | 'postgres']> = [['embedded'], ['postgres']];

describe.each(stores)('regressions on the %s store', (store) => {
  let postgres: ThrowawayPostgres | undefined;
  let svc: InProcessService;
  let receiver: Receiver;
  let readerKey: string;
  let credential: string;
  beforeAll(async () => {
    if (store === 'postgres') postgres = await startPostgres();
    svc = await inProcessService({
      ...(postgres && { databaseUrl: await postgres.database('regressions') }),
      sweepIntervalMs: 3_600_000,
      production: { onRegression: 'suspend', webhookPollMs: 200 },
    });
    ({ credential } = await svc.reviewer('Rita'));
    ({ key: readerKey } = await addRegisterReader(svc.db, 'production token endpoint'));
    const secretsKey = secretsKeyFrom(svc.service.production.key.privateKey);
    const hooked = await startReceiver();
    const { secret } = await addWebhook(svc.db, secretsKey, {
      url: `${hooked.url}/hooks`,
      events: [
        'partner.approved',
        'partner.revoked',
        'partner.regressed',
        'partner.suspended',
        'partner.reinstated',
      ],
    });
    hooked.setSecret(secret);
    receiver = hooked;
  }, 120_000);
  afterAll(async () => {
    receiver?.stop();
    await svc?.close();
    await postgres?.stop();
  });

  const url = () => svc.service.url;

  /** The partner's entry of the signed register, as a production gate reads it, and its seq. */
  async function registerEntry(partnerId: string) {
    const answer = await fetch(`${url()}/register/partners/${partnerId}`, {
      headers: { authorization: `Bearer ${readerKey}` },
    });
    expect(answer.status).toBe(200);
    const payload = JSON.parse(
      Buffer.from((await answer.text()).split('.')[1]!, 'base64url').toString('utf8'),
    );
    return {
      ...(payload.partners[0] as { status: string; scopes: string[]; decisionId: string }),
      seq: payload.seq as number,
    };
  }

  /** A partner approved through the reviewer's own form on an approvable run. */
  async function approvedPartner(name: string) {
    const partner = await svc.partner(name);
    const runId = await approvableRun(svc.db, partner.partnerId);
    await approve(runId);
    return { ...partner, runId };
  }

  async function approve(runId: string) {
    const forms = await reviewerForms(url(), credential);
    const answer = await forms.post(`/ui/runs/${runId}`, `/ui/runs/${runId}/decision`, {
      decision: 'approved',
      note: 'certified',
    });
    expect(answer.status, answer.text.slice(0, 300)).toBe(303);
  }

  const delivered = (partnerId: string) =>
    receiver
      .accepted()
      .filter((line) => line.data.partnerId === partnerId)
      .map((line) => line.type);

  it('under suspend: recorded, signed, audited, counted, announced, and the register says suspended with a higher seq', async () => {
    const partner = await approvedPartner(`Acme ${store}`);
    const before = await registerEntry(partner.partnerId);
    expect(before.status).toBe('active');
    const suspendedBefore = await counted('suspended');
    const outcome = await svc.service.regressions.record(finding(partner.partnerId));
    expect(outcome).toMatchObject({ recorded: true, consequence: 'suspended' });
    expect(outcome.suspensionId).toMatch(/^dec_/);

    // The row, with its evidence (fingerprints only) and the policy applied.
    const [row] = await svc.db.query<{
      check_id: string;
      policy: string;
      exchanges: Exchange[];
      envelope: string;
    }>('SELECT check_id, policy, exchanges, envelope FROM regressions WHERE id = $1', [outcome.regressionId]);
    expect(row).toMatchObject({ check_id: 'client-token-reuse', policy: 'suspend' });
    expect(row!.exchanges).toHaveLength(3);

    // The statement verifies with the service's JWKS; its subject is the approved run's attestation.
    const jwks = await (await fetch(`${url()}/.well-known/jwks.json`)).json();
    const envelope = JSON.parse(row!.envelope) as DsseEnvelope;
    const statement = verifyEnvelope(envelope, jwks);
    expect(statement.predicateType).toBe(regressionPredicateType);
    expect(statement.subject[0]).toEqual({
      name: `partner/${partner.partnerId}/${partner.runId}.attestation.json`,
      digest: { sha256: createHash('sha256').update(`{"attestation":"${partner.runId}"}\n`).digest('hex') },
    });
    expect(statement.predicate).toMatchObject({
      regressionId: outcome.regressionId,
      check: 'client-token-reuse',
      policy: 'suspend',
      consequence: 'suspended',
      suspensionId: outcome.suspensionId,
      runId: partner.runId,
      plan: { id: defaultPlan.id, digest: defaultPlan.digest },
    });
    expect(statement.predicate.exchanges.map((x) => x.fingerprint)).toEqual(
      row!.exchanges.map((x) => x.fingerprint),
    );
    // Negative control: the same envelope with one byte of its statement changed does not verify.
    const tampered = {
      ...envelope,
      payload: Buffer.from(
        Buffer.from(envelope.payload, 'base64').toString('utf8').replace('"suspend"', '"notify"'),
      ).toString('base64'),
    };
    expect(tampered.payload).not.toBe(envelope.payload);
    expect(() => verifyEnvelope(tampered, jwks)).toThrow('not signed');

    // The audit lines: the regression, and the suspension by the service.
    const audit = await svc.db.query<{ actor: string; action: string }>(
      `SELECT actor, action FROM audit_log WHERE subject = $1 AND action IN ('regression.recorded', 'partner.suspended') ORDER BY id`,
      [partner.partnerId],
    );
    expect(audit).toEqual([
      { actor: 'service', action: 'partner.suspended' },
      { actor: 'service', action: 'regression.recorded' },
    ]);
    expect(await counted('suspended')).toBe(suspendedBefore + 1);

    // The register, signed with a higher seq, says suspended with no scope.
    const after = await registerEntry(partner.partnerId);
    expect(after).toMatchObject({ status: 'suspended', scopes: [], decisionId: outcome.suspensionId });
    expect(after.seq).toBeGreaterThan(before.seq);

    // The webhooks, delivered in order to the receiver (which verifies each signature).
    await receiver.until(
      () => delivered(partner.partnerId).includes('partner.suspended'),
      'partner.suspended',
      30_000,
    );
    expect(delivered(partner.partnerId)).toEqual([
      'partner.approved',
      'partner.regressed',
      'partner.suspended',
    ]);
    const regressed = receiver
      .accepted()
      .find((line) => line.type === 'partner.regressed' && line.data.partnerId === partner.partnerId);
    expect(regressed!.data).toMatchObject({
      regressionId: outcome.regressionId,
      check: 'client-token-reuse',
      policy: 'suspend',
      consequence: 'suspended',
    });
    const suspended = receiver
      .accepted()
      .find((line) => line.type === 'partner.suspended' && line.data.partnerId === partner.partnerId);
    expect(suspended!.data).toMatchObject({
      decisionId: outcome.suspensionId,
      scopes: planScopes(defaultPlan),
    });

    // The partner's production page shows it, escaped, with its statement; nothing in it acts.
    const forms = await reviewerForms(url(), credential);
    const page = (await forms.get(`/ui/partners/${partner.partnerId}/production`)).text;
    expect(page).toContain('Production: <strong class="rejected">suspended</strong>');
    const section = page.slice(page.indexOf(`data-regression="${outcome.regressionId}"`));
    expect(section).toContain('client-token-reuse');
    expect(section).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(section).not.toContain('<script>');
    expect(section).toContain(`fp_0_${partner.partnerId.slice(-6)}`);
    expect(section).toContain('data-consequence="suspended"');
    const table = section.slice(section.indexOf('<table class="evidence"'), section.indexOf('</table>'));
    expect(table).not.toMatch(/<(a|form|button|input)\b/);
    expect(section).toContain(`<a href="/ui/regressions/${outcome.regressionId}/statement">`);
    const download = await fetch(`${url()}/ui/regressions/${outcome.regressionId}/statement`, {
      headers: { cookie: await signedInCookie() },
    });
    expect(download.status).toBe(200);
    expect(await download.text()).toBe(row!.envelope);
    // Control: the download is behind the reviewer's sign-in.
    const anonymous = await fetch(`${url()}/ui/regressions/${outcome.regressionId}/statement`, {
      redirect: 'manual',
    });
    expect(anonymous.status).not.toBe(200);
  }, 120_000);

  async function signedInCookie(): Promise<string> {
    const signin = await fetch(`${url()}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: url(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ credential }),
    });
    return (signin.headers.get('set-cookie') ?? '').split(';')[0]!;
  }

  it('a new approved run reinstates (partner.reinstated, register active with its scopes); a rejection does not', async () => {
    const partner = await approvedPartner(`Reinstated ${store}`);
    const { suspensionId, regressionId } = await svc.service.regressions.record(finding(partner.partnerId));
    expect((await registerEntry(partner.partnerId)).status).toBe('suspended');

    // A rejection of another run is recorded and reinstates nothing (control).
    const other = await approvableRun(svc.db, partner.partnerId);
    const forms = await reviewerForms(url(), credential);
    const rejected = await forms.post(`/ui/runs/${other}`, `/ui/runs/${other}/decision`, {
      decision: 'rejected',
      note: 'not this one',
    });
    expect(rejected.status).toBe(303);
    // Rejecting the run the held approval rests on is still refused, pointing to Revoke.
    const inForce = await forms.post(`/ui/runs/${partner.runId}`, `/ui/runs/${partner.runId}/decision`, {
      decision: 'rejected',
      note: 'no',
    });
    expect(inForce.status).toBe(409);
    const held = await registerEntry(partner.partnerId);
    expect(held).toMatchObject({ status: 'suspended', decisionId: suspensionId });

    const fresh = await approvableRun(svc.db, partner.partnerId);
    await approve(fresh);
    const after = await registerEntry(partner.partnerId);
    expect(after.status).toBe('active');
    expect(after.scopes).toEqual(planScopes(defaultPlan).sort());
    expect(after.seq).toBeGreaterThan(held.seq);
    await receiver.until(
      () => delivered(partner.partnerId).includes('partner.reinstated'),
      'partner.reinstated',
      30_000,
    );
    expect(delivered(partner.partnerId)).toEqual([
      'partner.approved',
      'partner.regressed',
      'partner.suspended',
      'partner.approved',
      'partner.reinstated',
    ]);
    const reinstated = receiver
      .accepted()
      .find((line) => line.type === 'partner.reinstated' && line.data.partnerId === partner.partnerId)!;
    expect(reinstated.data).toMatchObject({ runId: fresh, suspensionId, scopes: planScopes(defaultPlan) });
    // The regression is settled by the approval; the partner's API shows it so.
    const listed = (await (
      await fetch(`${url()}/api/production/regressions`, {
        headers: { authorization: `Bearer ${partner.apiKey}` },
      })
    ).json()) as { regressions: Array<{ id: string; resolvedBy: string | null }> };
    expect(listed.regressions.find((item) => item.id === regressionId)?.resolvedBy).toBe(after.decisionId);
    // Control: an approval of an active partner announces no reinstatement.
    await approve(await approvableRun(svc.db, partner.partnerId));
    await receiver.until(
      () => delivered(partner.partnerId).filter((type) => type === 'partner.approved').length === 3,
      'the third approval',
      30_000,
    );
    expect(delivered(partner.partnerId).filter((type) => type === 'partner.reinstated')).toHaveLength(1);
  }, 120_000);

  it('a suspended partner can be revoked (suspension is not revocation)', async () => {
    const partner = await approvedPartner(`Revoked after suspension ${store}`);
    await svc.service.regressions.record(finding(partner.partnerId));
    expect((await registerEntry(partner.partnerId)).status).toBe('suspended');
    const forms = await reviewerForms(url(), credential);
    const page = `/ui/partners/${partner.partnerId}/production`;
    expect((await forms.get(page)).text).toContain('value="revoked"');
    const revoked = await forms.post(page, `/ui/partners/${partner.partnerId}/revoke`, {
      decision: 'revoked',
      note: 'ended after the regression',
    });
    expect(revoked.status).toBe(303);
    expect((await registerEntry(partner.partnerId)).status).toBe('revoked');
    // Control: nothing left to revoke.
    expect((await forms.get(page)).text).not.toContain('value="revoked"');
  }, 60_000);

  it('under notify the partner stays active (control): announced, not suspended', async () => {
    const partner = await approvedPartner(`Notified ${store}`);
    const before = await registerEntry(partner.partnerId);
    const outcome = await recordRegression(svc.db, finding(partner.partnerId), {
      policy: 'notify',
      signingKey: svc.service.production.key,
      nudge: svc.service.production.nudge,
    });
    expect(outcome).toMatchObject({ recorded: true, consequence: 'notified', suspensionId: null });
    const after = await registerEntry(partner.partnerId);
    expect(after).toMatchObject({ status: 'active', decisionId: before.decisionId });
    expect(after.scopes).toEqual(planScopes(defaultPlan).sort());
    await receiver.until(
      () => delivered(partner.partnerId).includes('partner.regressed'),
      'partner.regressed',
      30_000,
    );
    // Nothing but the approval and the regression was announced: no suspension queued.
    const events = await svc.db.query<{ type: string }>(
      'SELECT type FROM webhook_events WHERE partner_id = $1 ORDER BY seq',
      [partner.partnerId],
    );
    expect(events.map((event) => event.type)).toEqual(['partner.approved', 'partner.regressed']);
    expect(delivered(partner.partnerId)).toEqual(['partner.approved', 'partner.regressed']);
  }, 60_000);

  it('the same finding twice is recorded once', async () => {
    const partner = await approvedPartner(`Twice ${store}`);
    const once = finding(partner.partnerId);
    const first = await svc.service.regressions.record(once);
    const second = await svc.service.regressions.record({ ...once, detail: 'judged again after a restart' });
    expect(first.recorded).toBe(true);
    expect(second).toEqual({ ...first, recorded: false });
    const rows = await svc.db.query('SELECT id FROM regressions WHERE partner_id = $1', [partner.partnerId]);
    expect(rows).toHaveLength(1);
    const events = await svc.db.query<{ type: string }>(
      'SELECT type FROM webhook_events WHERE partner_id = $1 ORDER BY seq',
      [partner.partnerId],
    );
    expect(events.map((event) => event.type)).toEqual([
      'partner.approved',
      'partner.regressed',
      'partner.suspended',
    ]);
    // Control: another window of the same check is another regression.
    const third = await svc.service.regressions.record(finding(partner.partnerId));
    expect(third).toMatchObject({ recorded: true, consequence: 'unchanged' });
  }, 60_000);

  it('a regression for a revoked partner is recorded and changes nothing', async () => {
    const partner = await approvedPartner(`Revoked ${store}`);
    const forms = await reviewerForms(url(), credential);
    const page = `/ui/partners/${partner.partnerId}/production`;
    expect(
      (
        await forms.post(page, `/ui/partners/${partner.partnerId}/revoke`, {
          decision: 'revoked',
          note: 'ended',
        })
      ).status,
    ).toBe(303);
    const before = await registerEntry(partner.partnerId);
    const decisionsBefore = await svc.db.query('SELECT id FROM decisions WHERE partner_id = $1', [
      partner.partnerId,
    ]);
    const outcome = await svc.service.regressions.record(finding(partner.partnerId));
    expect(outcome).toMatchObject({ recorded: true, consequence: 'unchanged', suspensionId: null });
    const after = await registerEntry(partner.partnerId);
    expect(after).toMatchObject({ status: 'revoked', decisionId: before.decisionId });
    expect(
      await svc.db.query('SELECT id FROM decisions WHERE partner_id = $1', [partner.partnerId]),
    ).toHaveLength(decisionsBefore.length);
    // A partner never approved: recorded, its statement's subject the evidence itself.
    const stranger = await svc.partner(`Never approved ${store}`);
    const unapproved = await svc.service.regressions.record(finding(stranger.partnerId));
    expect(unapproved.consequence).toBe('unchanged');
    const [row] = await svc.db.query<{ envelope: string }>('SELECT envelope FROM regressions WHERE id = $1', [
      unapproved.regressionId,
    ]);
    const statement = verifyEnvelope(
      JSON.parse(row!.envelope),
      await (await fetch(`${url()}/.well-known/jwks.json`)).json(),
    );
    expect(statement.subject[0].name).toBe(`partner/${stranger.partnerId}/evidence`);
    expect(statement.predicate.runId).toBeNull();
  }, 60_000);

  it('a partner lists only its own regressions, with their evidence and statements', async () => {
    const a = await approvedPartner(`A ${store}`);
    const b = await approvedPartner(`B ${store}`);
    const ofA = await svc.service.regressions.record(finding(a.partnerId));
    const list = async (apiKey: string) => {
      const answer = await fetch(`${url()}/api/production/regressions`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect(answer.status).toBe(200);
      return (
        (await answer.json()) as { regressions: Array<{ id: string; exchanges: Exchange[]; policy: string }> }
      ).regressions;
    };
    const seenByA = await list(a.apiKey);
    expect(seenByA.map((item) => item.id)).toEqual([ofA.regressionId]);
    expect(seenByA[0]!.exchanges).toHaveLength(3);
    expect(seenByA[0]!.policy).toBe('suspend');
    expect(await list(b.apiKey)).toEqual([]);
    const statementFor = (apiKey: string) =>
      fetch(`${url()}/api/production/regressions/${ofA.regressionId}/statement`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
    expect((await statementFor(a.apiKey)).status).toBe(200);
    expect((await statementFor(b.apiKey)).status).toBe(404);
    expect((await fetch(`${url()}/api/production/regressions`)).status).toBe(401);
  }, 60_000);

  it('refuses a malformed finding, saying what was expected, and keeps only the fields of an exchange', async () => {
    const partner = await svc.partner(`Malformed ${store}`);
    await expect(
      svc.service.regressions.record({ ...finding(partner.partnerId), window: { from: 10, to: 5 } }),
    ).rejects.toThrow(
      "not a regression finding: window must be {from, to} in ms since the epoch, from ≤ to; the judge's Finding is expected",
    );
    await expect(svc.service.regressions.record(finding('ptn_nobody'))).rejects.toThrow(
      'which the service does not know',
    );
    const smuggled = finding(partner.partnerId);
    (smuggled.exchanges[0] as unknown as Record<string, unknown>).token = 'eyJ.secret.token';
    const many = { ...smuggled, exchanges: Array.from({ length: 30 }, () => smuggled.exchanges[0]!) };
    const { regressionId } = await svc.service.regressions.record(many);
    const [row] = await svc.db.query<{ exchanges: Exchange[]; envelope: string }>(
      'SELECT exchanges, envelope FROM regressions WHERE id = $1',
      [regressionId],
    );
    expect(row!.exchanges).toHaveLength(20);
    expect(JSON.stringify(row)).not.toContain('eyJ.secret.token');
    // Control: the field was there to be dropped.
    expect(JSON.stringify(many)).toContain('eyJ.secret.token');
  }, 60_000);
});
