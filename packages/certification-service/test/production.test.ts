import { createHash, createPublicKey, verify } from 'node:crypto';
import { inTotoPayloadType, parseEnvelope, preAuthEncoding } from '@partner-lending/conformance';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwksOf } from '../src/index.js';
import { recordSignedDecision, standingApproval } from '../src/production/decisions/signed.js';
import { decisionPredicateType } from '../src/production/decisions/statement.js';
import { addRegisterReader, createRegister } from '../src/production/register/register.js';
import { attestedRun, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

const stores: Array<['embedded' | 'postgres']> = [['embedded'], ['postgres']];

describe.each(stores)('the production flow on the %s store', (store) => {
  let postgres: ThrowawayPostgres | undefined;
  let svc: InProcessService;
  let readerKey: string;
  let partner: { partnerId: string; apiKey: string };
  let other: { partnerId: string; apiKey: string };
  let reviewerId: string;
  beforeAll(async () => {
    if (store === 'postgres') postgres = await startPostgres();
    svc = await inProcessService({
      ...(postgres && { databaseUrl: await postgres.database('production') }),
      sweepIntervalMs: 60_000,
      production: { registerMaxAgeSeconds: 60, expiryNoticeDays: 30 },
    });
    partner = await svc.partner('Acme Lending');
    other = await svc.partner('Other Lending');
    ({ reviewerId } = await svc.reviewer('Rita'));
    ({ key: readerKey } = await addRegisterReader(svc.db, 'production token endpoint'));
  });
  afterAll(async () => {
    await svc?.close();
    await postgres?.stop();
  });

  const deps = () => svc.service.production;
  const decide = (input: Parameters<typeof recordSignedDecision>[1]) =>
    svc.db.transaction((tx) => recordSignedDecision(tx, input, deps()));
  const register = (path = '/register', headers: Record<string, string> = {}) =>
    fetch(`${svc.service.url}${path}`, { headers: { authorization: `Bearer ${readerKey}`, ...headers } });
  const registerPayload = async (path = '/register') => {
    const response = await register(path);
    expect(response.status).toBe(200);
    const jwks = createLocalJWKSet((await jwksOf(svc.db)) as Parameters<typeof createLocalJWKSet>[0]);
    const { payload, protectedHeader } = await jwtVerify(await response.text(), jwks, {
      typ: 'partner-register+jwt',
      issuer: svc.service.publicUrl,
    });
    expect(protectedHeader.kid).toBeTruthy();
    return payload as unknown as {
      partners: Array<Record<string, unknown>>;
      exp: number;
      iat: number;
      seq: number;
    };
  };

  it('signs an approval as a DSSE decision statement on the run attestation, served to its partner only', async () => {
    const attestation = '{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}\n';
    const runId = await attestedRun(svc.db, partner.partnerId, attestation);
    const validUntil = svc.service.production.validUntil();
    const { decisionId, eventId } = await decide({
      partnerId: partner.partnerId,
      runId,
      reviewerId,
      decision: 'approved',
      note: 'all checks passed',
      scopes: ['read:loans', 'create:loan_draft'],
      validUntil,
    });
    expect(eventId).toMatch(/^msg_/); // in the outbox even with no webhook yet: the event log
    const response = await fetch(`${svc.service.url}/api/decisions/${decisionId}/statement`, {
      headers: { authorization: `Bearer ${partner.apiKey}` },
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    const envelope = parseEnvelope(text);
    expect(envelope.payloadType).toBe(inTotoPayloadType);
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      predicateType: decisionPredicateType,
      subject: [
        {
          name: `${runId}.attestation.json`,
          digest: { sha256: createHash('sha256').update(attestation).digest('hex') },
        },
      ],
      predicate: {
        partner: { id: partner.partnerId, name: 'Acme Lending' },
        decision: 'approved',
        scopes: ['read:loans', 'create:loan_draft'],
        reviewer: { name: 'Rita' },
        note: 'all checks passed',
        runId,
        validUntil: validUntil.toISOString(),
      },
    });
    expect(Math.round((validUntil.getTime() - Date.now()) / 86_400_000)).toBe(365);
    // The signature verifies with the JWKS key of its keyid; a one-byte change of the payload does not.
    const { keys } = (await jwksOf(svc.db)) as { keys: Array<{ kid: string }> };
    const jwk = keys.find((k) => k.kid === envelope.signatures[0]!.keyid)!;
    const publicKey = createPublicKey({ key: jwk as never, format: 'jwk' });
    const verifies = (payload: Buffer) =>
      verify(
        null,
        preAuthEncoding(envelope.payloadType, payload),
        publicKey,
        Buffer.from(envelope.signatures[0]!.sig, 'base64'),
      );
    const payload = Buffer.from(envelope.payload, 'base64');
    expect(verifies(payload)).toBe(true);
    const changed = Buffer.from(payload);
    changed.writeUInt8(changed.readUInt8(changed.length - 3) ^ 1, changed.length - 3);
    expect(verifies(changed)).toBe(false);
    // Another partner's key does not reach it; no key is 401.
    expect(
      (
        await fetch(`${svc.service.url}/api/decisions/${decisionId}/statement`, {
          headers: { authorization: `Bearer ${other.apiKey}` },
        })
      ).status,
    ).toBe(404);
    expect((await fetch(`${svc.service.url}/api/decisions/${decisionId}/statement`)).status).toBe(401);
  });

  it('serves the register signed, to register readers only, with ETag and max-age', async () => {
    expect((await fetch(`${svc.service.url}/register`)).status).toBe(401);
    expect((await register('/register', { authorization: `Bearer ${partner.apiKey}` })).status).toBe(401);
    const response = await register();
    expect(response.headers.get('content-type')).toBe('application/jwt');
    expect(response.headers.get('cache-control')).toBe('max-age=60');
    const etag = response.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const jws = await response.text();
    expect(decodeProtectedHeader(jws)).toMatchObject({ typ: 'partner-register+jwt' });
    expect((await register('/register', { 'if-none-match': etag })).status).toBe(304);
    const payload = await registerPayload();
    expect(payload.exp - payload.iat).toBe(300);
    expect(payload.partners).toEqual([
      expect.objectContaining({
        partnerId: partner.partnerId,
        name: 'Acme Lending',
        status: 'active',
        scopes: ['create:loan_draft', 'read:loans'],
      }),
    ]);
    // Every signed register takes the next seq; the same copy again keeps its own (a re-delivery).
    expect(Number.isSafeInteger(payload.seq) && payload.seq > 0).toBe(true);
    expect((await registerPayload()).seq).toBe(payload.seq);
    const one = await registerPayload(`/register/partners/${partner.partnerId}`);
    expect(one.partners).toHaveLength(1);
    expect(one.seq).toBeGreaterThan(payload.seq);
    // A partner never approved is absent; a signature by another key does not verify.
    const absent = await register(`/register/partners/${other.partnerId}`);
    expect(absent.status).toBe(404);
    // An absence is cached like an entry (the production mock's per-partner lookup relies on it).
    expect(absent.headers.get('cache-control')).toBe('max-age=60');
    const forged = `${jws.slice(0, jws.lastIndexOf('.') + 1)}${'A'.repeat(86)}`;
    const jwks = createLocalJWKSet((await jwksOf(svc.db)) as Parameters<typeof createLocalJWKSet>[0]);
    await expect(compactVerify(forged, jwks)).rejects.toThrow();
  });

  it('never hands out a copy a reader could hold past its exp, whatever --register-max-age says', async () => {
    const key = deps().key;
    // A day of max-age against the longest life a register gets (a day): the copy's rest decides.
    const long = createRegister({ db: svc.db, key, issuer: svc.service.publicUrl, maxAgeSeconds: 86_400 });
    const copy = (await long.document())!;
    const now = Math.floor(Date.now() / 1000);
    expect(copy.exp - now).toBeLessThanOrEqual(86_400);
    expect(long.maxAgeOf(copy, now)).toBe(copy.exp - now);
    expect(long.maxAgeOf(copy, copy.exp - 10)).toBe(10);
    expect(long.maxAgeOf(copy, copy.exp + 5)).toBe(0);
    // Negative control: a short max-age is served as it is.
    const short = createRegister({ db: svc.db, key, issuer: svc.service.publicUrl, maxAgeSeconds: 60 });
    expect(short.maxAgeOf((await short.document())!)).toBe(60);
  });

  it('revokes at once in the register, and a new approved run replaces the approval', async () => {
    const before = await registerPayload();
    const revoked = await svc.db.transaction(async (tx) => {
      const approval = (await standingApproval(tx, partner.partnerId))!;
      return recordSignedDecision(
        tx,
        {
          partnerId: partner.partnerId,
          runId: approval.run_id,
          reviewerId,
          decision: 'revoked',
          note: 'key leaked',
          scopes: [],
          validUntil: null,
        },
        deps(),
        { scopes: approval.scopes },
      );
    });
    const after = await registerPayload();
    // What changed is signed under a higher seq: the copy from before can never be taken again.
    expect(after.seq).toBeGreaterThan(before.seq);
    expect(after.partners).toEqual([
      expect.objectContaining({
        partnerId: partner.partnerId,
        status: 'revoked',
        scopes: [],
        decisionId: revoked.decisionId,
      }),
    ]);
    const [audit] = await svc.db.query<{ action: string; detail: { decision: string } }>(
      "SELECT action, detail FROM audit_log WHERE action = 'decision.signed' ORDER BY id DESC LIMIT 1",
    );
    expect(audit!.detail.decision).toBe('revoked');
    const runId = await attestedRun(svc.db, partner.partnerId, '{"second":"attestation"}\n');
    await decide({
      partnerId: partner.partnerId,
      runId,
      reviewerId,
      decision: 'approved',
      note: 'fixed',
      scopes: ['read:loans'],
      validUntil: svc.service.production.validUntil(),
    });
    expect((await registerPayload()).partners).toEqual([
      expect.objectContaining({ partnerId: partner.partnerId, status: 'active', scopes: ['read:loans'] }),
    ]);
  });

  it('announces an approval expiring once, and records its expiry (register shows it before the sweep)', async () => {
    const runId = await attestedRun(svc.db, other.partnerId, '{"other":"attestation"}\n');
    await svc.db.query(
      "INSERT INTO webhooks (id, url, events, secret_sealed) VALUES ('whk_test', 'http://127.0.0.1:1/', '[\"approval.expiring\",\"approval.expired\"]', 'v1.x.y.z')",
    );
    await decide({
      partnerId: other.partnerId,
      runId,
      reviewerId,
      decision: 'approved',
      note: 'ok',
      scopes: ['read:loans'],
      validUntil: new Date(Date.now() + 10 * 86_400_000),
    });
    expect(await svc.service.production.sweep()).toEqual({ expired: 0, noticed: 1 });
    expect(await svc.service.production.sweep()).toEqual({ expired: 0, noticed: 0 });
    // Its end comes: the register says expired at once; the sweep records the signed decision once.
    await svc.db.query(
      "UPDATE decisions SET valid_until = now() - interval '1 second' WHERE partner_id = $1 AND decision = 'approved'",
      [other.partnerId],
    );
    expect((await registerPayload(`/register/partners/${other.partnerId}`)).partners[0]).toMatchObject({
      status: 'expired',
      scopes: [],
    });
    expect(await svc.service.production.sweep()).toEqual({ expired: 1, noticed: 0 });
    expect(await svc.service.production.sweep()).toEqual({ expired: 0, noticed: 0 });
    const events = await svc.db.query<{ type: string }>(
      'SELECT type FROM webhook_events WHERE partner_id = $1 ORDER BY seq',
      [other.partnerId],
    );
    expect(events.map((e) => e.type)).toEqual(['partner.approved', 'approval.expiring', 'approval.expired']);
    const [expired] = await svc.db.query<{ id: string; reviewer_id: string | null }>(
      "SELECT id, reviewer_id FROM decisions WHERE partner_id = $1 AND decision = 'expired'",
      [other.partnerId],
    );
    expect(expired!.reviewer_id).toBeNull();
    const [statement] = await svc.db.query<{ envelope: string }>(
      'SELECT envelope FROM decision_statements WHERE decision_id = $1',
      [expired!.id],
    );
    expect(
      JSON.parse(Buffer.from(parseEnvelope(statement!.envelope).payload, 'base64').toString()).predicate
        .decision,
    ).toBe('expired');
  });

  it('numbers registers in the order of what they say, across instances signing at once', async () => {
    const key = deps().key;
    const instances = [0, 1].map(() =>
      createRegister({ db: svc.db, key, issuer: svc.service.publicUrl, maxAgeSeconds: 60 }),
    );
    const third = await svc.partner('Order Lending');
    const runId = await attestedRun(svc.db, third.partnerId, '{"order":"attestation"}\n');
    const signed: Array<{ seq: number; status: unknown }> = [];
    const read = async (register: (typeof instances)[number]) => {
      const jws = (await register.document(third.partnerId))?.jws;
      if (!jws) return;
      const payload = JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString('utf8'));
      signed.push({ seq: payload.seq, status: payload.partners[0].status });
    };
    // Approve, revoke, approve again… while both instances sign the partner's entry as fast as they can.
    for (let round = 0; round < 6; round += 1) {
      const change =
        round % 2 === 0
          ? decide({
              partnerId: third.partnerId,
              runId,
              reviewerId,
              decision: 'approved',
              note: `round ${round}`,
              scopes: ['read:loans'],
              validUntil: svc.service.production.validUntil(),
            })
          : svc.service.production.decide({
              decision: 'revoked',
              partnerId: third.partnerId,
              reviewer: { id: reviewerId, name: 'Rita' },
              note: `round ${round}`,
            });
      await Promise.all([change, ...instances.flatMap((register) => [read(register), read(register)])]);
      await read(instances[round % 2]!);
    }
    // Seqs never repeat across instances but for the very same copy; the last numbered says the last state.
    const bySeq = new Map<number, unknown>();
    for (const item of signed) {
      if (bySeq.has(item.seq)) expect(bySeq.get(item.seq)).toBe(item.status);
      bySeq.set(item.seq, item.status);
    }
    const highest = Math.max(...bySeq.keys());
    expect(bySeq.get(highest)).toBe('revoked');
    expect(signed.length).toBeGreaterThan(12);
  });
});
