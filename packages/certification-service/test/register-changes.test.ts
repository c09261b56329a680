import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordSignedDecision } from '../src/production/decisions/signed.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { type Gate, startGate } from './support/gate.js';
import { attestedRun, ed25519Pem, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// The register's change notice (GET /register/changes): a revocation recorded by a reviewer reaches the
// production gate (the real `partner-mock --profile production`, as a process) in under 2 s, on the
// embedded store and on PostgreSQL with the revocation recorded on one instance and the gate long-polling
// another — while the same gate without the notice still issues tokens after 2 s (its 60-s max-age).

describe.each([['embedded'], ['postgres']] as const)(
  'a revocation reaches the gate on the %s store',
  (store) => {
    let postgres: ThrowawayPostgres | undefined;
    let instances: InProcessService[] = [];
    let dir: string;
    let gates: { notice: Gate; control: Gate };
    let partner: { partnerId: string };
    let reviewerId: string;
    const secret = randomBytes(16).toString('hex');

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `pcs-changes-${store}-`));
      const production = { registerMaxAgeSeconds: 60 };
      if (store === 'postgres') {
        postgres = await startPostgres();
        const databaseUrl = await postgres.database('changes');
        const keyFile = join(dir, 'key.pem');
        writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
        for (let i = 0; i < 2; i += 1)
          instances.push(
            await inProcessService({ databaseUrl, keyFile, sweepIntervalMs: 3_600_000, production }),
          );
      } else instances = [await inProcessService({ sweepIntervalMs: 3_600_000, production })];
      const [first] = instances;
      partner = await first!.partner('Quick Lending');
      ({ reviewerId } = await first!.reviewer('Rita'));
      const runId = await attestedRun(first!.db, partner.partnerId);
      await first!.db.transaction((tx) =>
        recordSignedDecision(
          tx,
          {
            partnerId: partner.partnerId,
            runId,
            reviewerId,
            decision: 'approved',
            note: 'approved for the change notice test',
            scopes: ['read:loans'],
            validUntil: first!.service.production.validUntil(),
          },
          first!.service.production,
        ),
      );
      const { key } = await addRegisterReader(first!.db, 'production gate');
      writeFileSync(join(dir, 'reader-key'), key, { mode: 0o600 });
      writeFileSync(
        join(dir, 'clients.json'),
        JSON.stringify([
          {
            partnerId: partner.partnerId,
            clientId: 'quick',
            clientSecret: secret,
            authorizedScopes: ['read:loans'],
          },
        ]),
      );
      // Both gates read the instance the revocation is NOT recorded on (the only one on the embedded store).
      const registerUrl = `${instances.at(-1)!.service.url}/register`;
      const args = [registerUrl, join(dir, 'reader-key'), join(dir, 'clients.json')] as const;
      gates = {
        notice: await startGate(...args),
        control: await startGate(...args, ['--register-changes', 'off']),
      };
    }, 120_000);

    afterAll(async () => {
      await Promise.all([gates?.notice.stop(), gates?.control.stop()]);
      for (const instance of instances) await instance.close();
      await postgres?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const token = async (gate: Gate) => {
      const response = await fetch(`${gate.authUrl}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`quick:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'read:loans' }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, string> };
    };

    it('refuses the revoked partner in under 2 s with the notice, and not without it', async () => {
      expect((await token(gates.notice)).status).toBe(200);
      expect((await token(gates.control)).status).toBe(200);
      // Let the gate's poll be held (its first answer comes at once, the next one waits).
      await new Promise((resolve) => setTimeout(resolve, 500));
      const started = performance.now();
      const outcome = await instances[0]!.service.production.decide({
        decision: 'revoked',
        partnerId: partner.partnerId,
        reviewer: { id: reviewerId, name: 'Rita' },
        note: 'revoked: the change notice test',
      });
      expect(outcome).toMatchObject({ recorded: true });
      let refused: { status: number; body: Record<string, string> } | undefined;
      let elapsed = 0;
      while (performance.now() - started < 5000) {
        const answer = await token(gates.notice);
        elapsed = performance.now() - started;
        if (answer.status !== 200) {
          refused = answer;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      console.log(`register changes (${store}): revocation to first refusal ${Math.round(elapsed)} ms`);
      expect(refused?.status).toBe(400);
      expect(refused?.body).toMatchObject({ error: 'unauthorized_client' });
      expect(refused?.body.error_description).toMatch(/its approval was revoked/);
      expect(elapsed).toBeLessThan(2000);
      // The negative control: the same gate reading the same register without the notice still serves its
      // copy 2 s after the revocation (it reads again at max-age, 60 s): the refusal above is the notice's.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2100 - (performance.now() - started))));
      expect((await token(gates.control)).status).toBe(200);
    }, 60_000);
  },
);

describe('the change notice as an endpoint', () => {
  let svc: InProcessService;
  let key: string;
  let other: string;
  beforeAll(async () => {
    svc = await inProcessService({
      sweepIntervalMs: 3_600_000,
      production: { registerChanges: { holdMs: 1000, limits: { perReader: 2, total: 3 } } },
    });
    ({ key } = await addRegisterReader(svc.db, 'gate one'));
    ({ key: other } = await addRegisterReader(svc.db, 'gate two'));
  }, 60_000);
  afterAll(() => svc?.close());

  const poll = (query: string, bearer: string | null = key, signal?: AbortSignal) =>
    fetch(`${svc.service.url}/register/changes${query}`, {
      headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
      ...(signal && { signal }),
    });

  it('answers at once without after, holds with the current seq, and refuses what it must', async () => {
    expect((await poll('', null)).status).toBe(401);
    expect((await poll('', 'pcs_register_nope')).status).toBe(401);
    expect((await poll('?after=-1')).status).toBe(400);
    const first = await poll('');
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const { changed, seq } = (await first.json()) as { changed: boolean; seq: number };
    expect(changed).toBe(true);
    expect(seq).toBeGreaterThan(0);
    // Nothing changes: held for the hold (1 s here), then changed: false with the same seq.
    const held = performance.now();
    expect(await (await poll(`?after=${seq}`)).json()).toEqual({ changed: false, seq });
    expect(performance.now() - held).toBeGreaterThan(900);
    // An older seq: answered at once.
    expect(await (await poll(`?after=${seq - 1}`)).json()).toEqual({ changed: true, seq });
  });

  it('bounds the waiters: 429 for one reader key, 503 for the instance, with Retry-After', async () => {
    const { seq } = (await (await poll('')).json()) as { seq: number };
    const controller = new AbortController();
    const holding = [
      poll(`?after=${seq}`, key, controller.signal),
      poll(`?after=${seq}`, key, controller.signal),
    ];
    await new Promise((resolve) => setTimeout(resolve, 200));
    const tooMany = await poll(`?after=${seq}`);
    expect(tooMany.status).toBe(429);
    expect(Number(tooMany.headers.get('retry-after'))).toBeGreaterThan(0);
    holding.push(poll(`?after=${seq}`, other, controller.signal));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const full = await poll(`?after=${seq}`, other);
    expect(full.status).toBe(503);
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(0);
    // A poll whose client went away is no longer held.
    controller.abort();
    await Promise.allSettled(holding);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(svc.service.production.changes.waiting).toBe(0);
  });

  it('answers a held poll when the instance shuts down, rather than holding its shutdown', async () => {
    const { seq } = (await (await poll('')).json()) as { seq: number };
    const own = await inProcessService({ sweepIntervalMs: 3_600_000 });
    const { key: ownKey } = await addRegisterReader(own.db, 'gate');
    const answer = fetch(`${own.service.url}/register/changes?after=${seq + 1000}`, {
      headers: { authorization: `Bearer ${ownKey}` },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closing = performance.now();
    await own.close();
    expect(performance.now() - closing).toBeLessThan(3000);
    expect((await answer).status).toBe(200);
  });
});
