import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DsseEnvelope, inTotoPayloadType } from '@partner-lending/conformance';
import { createPartnerClient } from '@partner-lending/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEvidenceReporter } from '../src/evidence/index.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { addWebhook } from '../src/production/webhooks/admin.js';
import { secretsKeyFrom } from '../src/secrets.js';
import { type Gate, startGate } from './support/gate.js';
import { approvableRun, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { type Receiver, startReceiver } from './support/receiver.js';
import { reviewerForms } from './support/reviewer-forms.js';

// Certified stays certified, end to end on both stores: a partner approved through the reviewer's form
// runs a correct SDK client through the production gate (`partner-mock --profile production`, a process)
// that reports every exchange to POST /evidence; the vendor revokes the partner's tokens midway (the SDK
// renews once) and the service judges it all with no regression. Its client then takes a token per call:
// the service flags it within 60 s with the evidence on the partner page, a signed statement and a
// `partner.regressed` webhook, and under `--on-regression suspend` the gate refuses it within 2 s of the
// suspension. A new approved run reinstates it (`partner.reinstated`, the gate issues again); then the
// client re-sends a revoked token, and is flagged for that too.
//
// PARTNER_E2E_STEADY_MS sets how long the correct client runs (default 120 000 ms: two of
// the judge's, and a revocation in it).

const steadyMs = Number(process.env.PARTNER_E2E_STEADY_MS ?? 120_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([['embedded'], ['postgres']] as const)(
  'certified stays certified through the production gate on the %s store',
  (store) => {
    let postgres: ThrowawayPostgres | undefined;
    let svc: InProcessService;
    let gate: Gate;
    let receiver: Receiver & { setSecret(secret: string): void };
    let dir: string;
    let partner: { partnerId: string; apiKey: string };
    let forms: Awaited<ReturnType<typeof reviewerForms>>;
    let operatorKey: string;
    const secret = randomBytes(16).toString('hex');

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `pcs-stays-${store}-`));
      if (store === 'postgres') postgres = await startPostgres();
      svc = await inProcessService({
        ...(postgres && { databaseUrl: await postgres.database('stays_certified') }),
        sweepIntervalMs: 3_600_000,
        production: { onRegression: 'suspend', registerMaxAgeSeconds: 60 },
      });
      receiver = await startReceiver();
      const hook = await addWebhook(svc.db, secretsKeyFrom(svc.service.production.key.privateKey), {
        url: `${receiver.url}/hooks`,
        events: ['partner.approved', 'partner.regressed', 'partner.suspended', 'partner.reinstated'],
      });
      receiver.setSecret(hook.secret);
      partner = await svc.partner(`Steady Lending ${store}`);
      const { credential } = await svc.reviewer(`Rita ${store}`);
      forms = await reviewerForms(svc.service.url, credential);
      await approve(await approvableRun(svc.db, partner.partnerId));

      const files = {
        reader: join(dir, 'reader.key'),
        reporter: join(dir, 'reporter.key'),
        operator: join(dir, 'operator.key'),
        clients: join(dir, 'clients.json'),
      };
      writeFileSync(files.reader, (await addRegisterReader(svc.db, 'production gate')).key, { mode: 0o600 });
      writeFileSync(files.reporter, (await addEvidenceReporter(svc.db, 'production gate')).key, {
        mode: 0o600,
      });
      operatorKey = randomBytes(24).toString('hex');
      writeFileSync(files.operator, operatorKey, { mode: 0o600 });
      writeFileSync(
        files.clients,
        JSON.stringify([
          {
            partnerId: partner.partnerId,
            clientId: 'steady',
            clientSecret: secret,
            authorizedScopes: ['read:loans'],
          },
        ]),
      );
      gate = await startGate(`${svc.service.url}/register`, files.reader, files.clients, [
        '--evidence',
        `${svc.service.url}/evidence`,
        '--evidence-key-file',
        files.reporter,
        '--operator-key-file',
        files.operator,
      ]);
    }, 180_000);

    afterAll(async () => {
      await gate?.stop();
      receiver?.stop();
      await svc?.close();
      await postgres?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    async function approve(runId: string) {
      const answer = await forms.post(`/ui/runs/${runId}`, `/ui/runs/${runId}/decision`, {
        decision: 'approved',
        note: 'certified under the default plan',
      });
      expect(answer.status, answer.text.slice(0, 300)).toBe(303);
    }

    const client = () =>
      createPartnerClient({
        authUrl: gate.authUrl,
        baseUrl: gate.baseUrl,
        clientId: 'steady',
        clientSecret: secret,
      });

    async function tokenStatus() {
      const answer = await fetch(`${gate.authUrl}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`steady:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'read:loans' }),
      });
      return { status: answer.status, body: (await answer.json()) as Record<string, string> };
    }

    const revokeTokens = () =>
      fetch(`${gate.authUrl}/operator/revoke-tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${operatorKey}` },
        body: JSON.stringify({ partnerId: partner.partnerId }),
      });

    /** The partner's regressions through the partner API (its own key). */
    async function regressions() {
      const answer = await fetch(`${svc.service.url}/api/production/regressions`, {
        headers: { authorization: `Bearer ${partner.apiKey}` },
      });
      const text = await answer.text();
      if (answer.status !== 200)
        throw new Error(`GET /api/production/regressions answered ${answer.status}: ${text}`);
      return (
        JSON.parse(text) as {
          regressions: Array<{
            id: string;
            check: string;
            consequence: string;
            recordedAt: string;
            exchanges: unknown[];
          }>;
        }
      ).regressions;
    }

    /** Exchanges the service holds for the partner, and how many still wait for judging. */
    const evidence = async () => {
      const [stored] = await svc.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM evidence_exchanges WHERE partner_id = $1',
        [partner.partnerId],
      );
      const [waiting] = await svc.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM evidence_queue WHERE partner_id = $1',
        [partner.partnerId],
      );
      return { stored: stored!.n, waiting: waiting!.n };
    };

    /** Calls `call` from `callers` loops until `stop()` says so; counts what answered. */
    async function drive(callers: number, call: () => Promise<unknown>, stop: () => boolean, pauseMs = 25) {
      const counts = { ok: 0, failed: 0, errors: [] as string[] };
      await Promise.all(
        Array.from({ length: callers }, async () => {
          while (!stop()) {
            try {
              await call();
              counts.ok += 1;
            } catch (error) {
              counts.failed += 1;
              if (counts.errors.length < 5) counts.errors.push(String(error));
            }
            if (pauseMs > 0) await sleep(pauseMs);
          }
        }),
      );
      return counts;
    }

    /** The first time `test` holds, polling every `everyMs` up to `timeoutMs`; undefined if it never does. */
    async function firstTime(
      test: () => Promise<boolean>,
      timeoutMs: number,
      everyMs = 20,
    ): Promise<number | undefined> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        if (await test()) return Date.now();
        await sleep(everyMs);
      }
      return undefined;
    }

    it(
      'a correct SDK client (a revocation midway) is never flagged; its evidence was judged',
      async () => {
        const sdk = client();
        const started = Date.now();
        let revoked = false;
        const counts = await drive(
          4,
          async () => {
            if (!revoked && Date.now() - started > steadyMs / 2) {
              revoked = true;
              expect((await revokeTokens()).status).toBe(200);
            }
            const page = await sdk.loans.list({ limit: 5 });
            if (page.response.status !== 200) throw new Error(`loans answered ${page.response.status}`);
          },
          () => Date.now() - started > steadyMs,
        );
        console.log(
          `stays certified (${store}): correct client ${counts.ok} calls in ${Math.round((Date.now() - started) / 1000)} s, ${counts.failed} failed`,
        );
        expect(counts.failed, counts.errors.join('\n')).toBe(0);
        expect(revoked).toBe(true);
        // Not vacuous: the gate's evidence reached the service and every exchange of it was judged.
        const judged = await firstTime(async () => {
          const { stored, waiting } = await evidence();
          return stored >= counts.ok && waiting === 0;
        }, 30_000);
        expect(judged, JSON.stringify(await evidence())).toBeDefined();
        expect(await regressions()).toEqual([]);
      },
      steadyMs + 90_000,
    );

    it('a token per call: flagged within 60 s with its evidence, signed and announced; the gate refuses within 2 s; a new approval reinstates', async () => {
      const switched = Date.now();
      let refusedAt: number | undefined;
      const careless = drive(
        6,
        async () => {
          const page = await client().loans.list({ limit: 5 });
          if (page.response.status !== 200) throw new Error(`loans answered ${page.response.status}`);
        },
        () => Date.now() - switched > 70_000 || refusedAt !== undefined,
        0,
      );
      const flagged = await firstTime(async () => (await regressions()).length > 0, 65_000, 250);
      refusedAt = await firstTime(async () => (await tokenStatus()).status !== 200, 10_000);
      const carelessCounts = await careless;
      expect(flagged, 'no regression within 65 s').toBeDefined();
      const [regression] = await regressions();
      expect(regression).toMatchObject({ check: 'client-token-reuse', consequence: 'suspended' });
      expect(regression!.exchanges.length).toBeGreaterThan(0);
      const recordedAt = Date.parse(regression!.recordedAt);
      console.log(
        `stays certified (${store}): token per call (${carelessCounts.ok} calls, each with a new token) flagged ${Math.round((recordedAt - switched) / 1000)} s after the switch; gate refused ${refusedAt === undefined ? 'never' : `${refusedAt - recordedAt} ms`} after the suspension`,
      );
      expect(recordedAt - switched).toBeLessThan(60_000);
      expect(refusedAt, 'the gate still issues tokens').toBeDefined();
      expect(refusedAt! - recordedAt).toBeLessThan(2000);
      const refusal = await tokenStatus();
      expect(refusal.body).toMatchObject({ error: 'unauthorized_client' });
      expect(refusal.body.error_description).toMatch(/suspended/);

      // The partner page shows it with its evidence; the statement is signed over what the API says.
      const page = await forms.get(`/ui/partners/${partner.partnerId}/production`);
      expect(page.status).toBe(200);
      expect(page.text).toContain('client-token-reuse');
      expect(page.text).toContain('/oauth/token');
      const statement = await fetch(
        `${svc.service.url}/api/production/regressions/${regression!.id}/statement`,
        { headers: { authorization: `Bearer ${partner.apiKey}` } },
      );
      expect(statement.status).toBe(200);
      const envelope = (await statement.json()) as DsseEnvelope;
      expect(envelope.payloadType).toBe(inTotoPayloadType);
      expect(envelope.signatures.length).toBe(1);
      const predicate = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')).predicate;
      expect(JSON.stringify(predicate)).toContain('client-token-reuse');
      await receiver.until(
        () =>
          ['partner.regressed', 'partner.suspended'].every((type) =>
            receiver
              .accepted()
              .some((event) => event.type === type && event.data.partnerId === partner.partnerId),
          ),
        'partner.regressed and partner.suspended',
      );

      // A new approved run reinstates: the webhook, then the gate issues again (the change notice).
      const reapproved = Date.now();
      await approve(await approvableRun(svc.db, partner.partnerId));
      const issuing = await firstTime(async () => (await tokenStatus()).status === 200, 10_000);
      expect(issuing, 'the gate never issued again').toBeDefined();
      expect(issuing! - reapproved).toBeLessThan(2000);
      await receiver.until(
        () => receiver.accepted().some((event) => event.type === 'partner.reinstated'),
        'partner.reinstated',
      );
    }, 150_000);

    it('re-sending a revoked token: flagged as client-revocation-recovery, and suspended again', async () => {
      const { body } = await tokenStatus();
      const token = body.access_token!;
      expect((await revokeTokens()).status).toBe(200);
      const resent = Date.now();
      let statuses: number[] = [];
      const flagged = await firstTime(
        async () => {
          // A client that keeps its revoked token: each call is refused, and it sends the same one again.
          const answer = await fetch(`${gate.baseUrl}/v3/partner/${partner.partnerId}/loans?limit=5`, {
            headers: { authorization: `Bearer ${token}` },
          });
          statuses.push(answer.status);
          await answer.arrayBuffer();
          return (await regressions()).some((item) => item.check === 'client-revocation-recovery');
        },
        65_000,
        250,
      );
      statuses = [...new Set(statuses)];
      expect(statuses).toEqual([401]);
      expect(flagged, 'no revocation-recovery regression within 65 s').toBeDefined();
      console.log(
        `stays certified (${store}): a revoked token re-sent, flagged ${Math.round((flagged! - resent) / 1000)} s later`,
      );
      expect(flagged! - resent).toBeLessThan(60_000);
      const again = await firstTime(async () => (await tokenStatus()).status !== 200, 5000);
      expect(again).toBeDefined();
    }, 120_000);
  },
);
