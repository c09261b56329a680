import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPartnerClient } from '@partner-lending/sdk';
import { scopes } from '@partner-lending/spec';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test-support/chromium.js';
import { type Gate, startGate } from './support/gate.js';
import { ed25519Pem } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { type Receiver, startReceiver } from './support/receiver.js';
import {
  adminJson,
  api,
  type CreatedRun,
  conformanceBin,
  journeyEnv,
  referenceClient,
  runCommand,
  type ServeProcess,
  startServe,
} from './support/service.js';

// Issue 34's whole flow, on both stores, with real processes: the service (`serve`, killed with SIGKILL
// once), a webhook receiver in Python verifying Standard Webhooks signatures itself, Chromium for the
// reviewer, the production mock (`partner-mock --profile production`) reading the signed register, and
// the SDK calling the production API.

const maxAge = 2;

let browser: Browser;
let postgres: ThrowawayPostgres;
beforeAll(async () => {
  browser = await launchChromium(chromium);
  postgres = await startPostgres();
});
afterAll(async () => {
  await browser?.close();
  await postgres?.stop();
});

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.each([['embedded'], ['postgres']] as const)(
  'the production flow end to end on the %s store',
  (store) => {
    let dir: string;
    let env: Record<string, string>;
    let serve: ServeProcess | undefined;
    let receiver: Receiver & { setSecret(secret: string): void };
    let mock: Gate | undefined;
    const args = () => [
      '--data-dir',
      join(dir, 'data'),
      '--register-max-age',
      String(maxAge),
      '--plan',
      join(dir, 'plan.json'),
      // Retries every 5 s after the first (documented option): the outage below ends within one retry
      // rather than at the default's 30-s and 2-min ones, so the file stays bounded on a loaded machine.
      '--webhook-retry-schedule',
      '5,5,5,5,5,5,5,5,5,5,5,5',
    ];
    const admin = (...args: string[]) => adminJson(args, { dataDir: join(dir, 'data'), env });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `pcs-prod-e2e-${store}-`));
      const keyFile = join(dir, 'attestation-key.pem');
      writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
      // The vendor's plan: listing loans (what the reference journey does with success), 2-s tokens so
      // that a 9-s journey renews them. Production then grants read:loans, and only that.
      writeFileSync(
        join(dir, 'plan.json'),
        JSON.stringify({ id: 'e2e-plan', operations: ['listLoans'], ttlSeconds: 2 }),
      );
      env = {
        SIGNING_KEY_FILE: keyFile,
        DATABASE_URL: store === 'postgres' ? await postgres.database('e2e') : '',
      };
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await mock?.stop();
      receiver?.stop();
      await serve?.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });

    async function signedIn(url: string, credential: string): Promise<Page> {
      const page = await browser.newPage();
      await page.goto(`${url}/signin`);
      await page.fill('#credential', credential);
      await submit(page, 'button');
      return page;
    }

    /** Clicks a form's button and expects the service to take it (a 303 to the next page). */
    async function submit(page: Page, button: string): Promise<void> {
      if ((await page.locator(button).count()) !== 1)
        throw new Error(
          `no ${button} on ${page.url()}: ${(await page.textContent('main'))?.replace(/\s+/g, ' ').slice(0, 1500)}`,
        );
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.click(button),
      ]);
      if (response.status() !== 303)
        throw new Error(
          `the form answered ${response.status()}: ${(await response.text())
            .replace(/<[^>]+>/g, ' ')
            .replace(/\s+/g, ' ')
            .slice(0, 800)}`,
        );
      await page.waitForLoadState();
    }

    it('certifies, approves, opens production, revokes, and loses no webhook through a SIGKILL and an outage', async () => {
      // The operator: a partner, a reviewer, the production side's register key, the partner console's webhook.
      const partner = await admin('add-partner', '--name', 'Acme Lending');
      const reviewer = await admin('add-reviewer', '--name', 'Rita Reviewer');
      const reader = await admin('add-register-reader', '--name', 'production token endpoint');
      const hook = await admin('add-webhook', '--url', `${receiver.url}/hooks`);
      expect(hook.secret).toMatch(/^whsec_/);
      receiver.setSecret(hook.secret!);
      serve = await startServe({ cwd: dir, env, args: args() });
      const url = serve.url;

      // The partner certifies through the service with the reference journey.
      const run: CreatedRun = (await api(url, partner.apiKey, 'POST', '/api/runs', { certify: true })).json();
      const journey = await runCommand(process.execPath, [referenceClient], {
        env: { ...journeyEnv(run), JOURNEY_SECONDS: '9' },
        timeoutMs: 60_000,
      });
      const judged = (
        await api(url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {
          journeyExitCode: journey.code,
        })
      ).json();
      expect(judged.verdict).toBe('PASS');
      await receiver.until(
        () => receiver.accepted().some((e) => e.type === 'run.judged' && e.data.runId === run.id),
        'run.judged',
      );

      // Before any approval the production mock refuses the partner, saying why.
      const clientSecret = randomBytes(16).toString('hex');
      const clientsFile = join(dir, 'clients.json');
      writeFileSync(
        clientsFile,
        JSON.stringify([
          {
            partnerId: partner.partnerId,
            clientId: 'acme-production',
            clientSecret,
            authorizedScopes: [...scopes],
          },
        ]),
      );
      const registerKeyFile = join(dir, 'register-key');
      writeFileSync(registerKeyFile, reader.key!, { mode: 0o600 });
      mock = await startGate(`${url}/register`, registerKeyFile, clientsFile);
      const tokenRequest = async () => {
        const response = await fetch(`${mock!.authUrl}/oauth/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`acme-production:${clientSecret}`).toString('base64')}`,
          },
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            scope: scopes.join(' '),
          }),
        });
        return { status: response.status, body: (await response.json()) as Record<string, string> };
      };
      const before = await tokenRequest();
      expect(before.status).toBe(400);
      expect(before.body).toMatchObject({ error: 'unauthorized_client' });
      expect(before.body.error_description).toMatch(/not approved for production: it was never approved/);

      // A reviewer approves in Chromium.
      const page = await signedIn(url, reviewer.credential!);
      await page.goto(`${url}/ui/runs/${run.id}`);
      await page.fill('#note', 'reference journey, every check passed');
      await submit(page, 'button[value=approved]');
      const approved = await receiver
        .until(() => receiver.accepted().some((e) => e.type === 'partner.approved'), 'partner.approved')
        .then(() => receiver.accepted().find((e) => e.type === 'partner.approved')!);
      expect(approved.data).toMatchObject({ partnerId: partner.partnerId, runId: run.id });
      const approvedScopes = approved.data.scopes as string[];
      expect(approvedScopes).toEqual(['read:loans']);

      // The partner's signed decision verifies offline on the attestation it rests on; a one-byte change does not.
      const statement = await api(
        url,
        partner.apiKey,
        'GET',
        `/api/decisions/${String(approved.data.decisionId)}/statement`,
      );
      expect(statement.status).toBe(200);
      const attestation = await api(url, partner.apiKey, 'GET', `/api/runs/${run.id}/attestation`);
      writeFileSync(join(dir, 'decision.json'), statement.text);
      writeFileSync(join(dir, 'attestation.json'), attestation.text);
      const verify = (file: string) =>
        runCommand(process.execPath, [
          conformanceBin,
          'verify',
          join(dir, file),
          '--keys',
          `${url}/.well-known/jwks.json`,
          '--attestation',
          join(dir, 'attestation.json'),
        ]);
      const verified = await verify('decision.json');
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
      const envelope = JSON.parse(statement.text) as { payload: string };
      const payload = Buffer.from(envelope.payload, 'base64');
      payload.writeUInt8(payload.readUInt8(20) ^ 1, 20);
      writeFileSync(
        join(dir, 'changed.json'),
        JSON.stringify({ ...envelope, payload: payload.toString('base64') }),
      );
      expect((await verify('changed.json')).code).not.toBe(0);

      // The production mock now issues a token with the approved scopes exactly, and the SDK lists loans.
      const granted = await until(
        async () => {
          const answer = await tokenRequest();
          return answer.status === 200 ? answer.body : undefined;
        },
        'a production token',
        (maxAge + 20) * 1000,
      );
      expect(granted.scope!.split(' ').sort()).toEqual([...approvedScopes].sort());
      const client = createPartnerClient({
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        clientId: 'acme-production',
        clientSecret,
      });
      const loans = await client.loans.list({ limit: 10 });
      expect(Array.isArray(loans.items)).toBe(true);
      expect(loans.response.status).toBe(200);

      // The reviewer revokes; the production mock refuses within the register's max-age; the receiver hears it.
      await page.goto(`${url}/ui/partners/${partner.partnerId}/production`);
      expect(await page.textContent('main')).toContain('active');
      await page.fill('#note', 'credentials leaked');
      const revokedAt = Date.now();
      await submit(page, 'button[value=revoked]');
      const refused = await until(
        async () => {
          const answer = await tokenRequest();
          return answer.status === 400 ? answer.body : undefined;
        },
        'a refusal after the revocation',
        (maxAge + 20) * 1000,
      );
      const refusedAfterMs = Date.now() - revokedAt;
      expect(refused.error_description).toMatch(/approval was revoked/);
      console.log(
        `[${store}] production mock refused ${refusedAfterMs} ms after the revocation (max-age ${maxAge} s)`,
      );
      expect(refusedAfterMs).toBeLessThan((maxAge + 10) * 1000);
      await receiver.until(
        () => receiver.accepted().some((e) => e.type === 'partner.revoked'),
        'partner.revoked',
      );

      // The receiver goes down; the reviewer approves again; the service is killed before it can deliver.
      await receiver.refuse(true);
      await page.goto(`${url}/ui/runs/${run.id}`);
      await page.fill('#note', 'new credentials issued');
      await submit(page, 'button[value=approved]');
      await page.close();
      await serve.stop('SIGKILL');
      // An attempt refused before the SIGKILL may not be recorded (the kill came first): wait for one
      // refused after the restart (once a killed instance's 60-s claim has lapsed, if it held one).
      const refusedBefore = receiver.lines.filter((l) => 'refused' in l).length;
      serve = await startServe({ cwd: dir, env, args: args() });
      await receiver.until(
        (lines) => lines.filter((l) => 'refused' in l).length > refusedBefore,
        'an attempt after the restart',
        90_000,
      );
      // A 10-s outage here; the full minute is production-webhook-outage.test.ts.
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      await receiver.refuse(false);
      await receiver.until(
        () => receiver.accepted().filter((e) => e.type === 'partner.approved').length >= 2,
        'the second partner.approved',
        120_000,
      );

      // Every decision's event arrived; an event that arrived twice came with the same id both times.
      const decisions = (await api(serve.url, partner.apiKey, 'GET', '/api/decisions')).json()
        .decisions as Array<{ id: string; decision: string }>;
      expect(decisions.map((d) => d.decision)).toEqual(['approved', 'revoked', 'approved']);
      const accepted = receiver.accepted();
      for (const decision of decisions)
        expect(
          accepted.some((e) => e.data.decisionId === decision.id),
          `event of ${decision.id}`,
        ).toBe(true);
      const idsOf = new Map<string, Set<string>>();
      for (const event of accepted) {
        const key = `${event.type}:${String(event.data.decisionId ?? event.data.runId)}`;
        idsOf.set(key, (idsOf.get(key) ?? new Set()).add(event.id));
      }
      for (const [key, ids] of idsOf) expect(ids.size, key).toBe(1);
      // In order per partner: the receiver saw the decisions in the order they were taken.
      expect(accepted.filter((e) => e.type !== 'run.judged').map((e) => e.type)).toEqual(
        expect.arrayContaining(['partner.approved', 'partner.revoked', 'partner.approved']),
      );
      const order = [
        ...new Map(
          accepted.filter((e) => e.data.decisionId).map((e) => [e.id, e.data.decisionId as string]),
        ).values(),
      ];
      expect(order).toEqual([...decisions].reverse().map((d) => d.id));

      // The delivery log in the UI: the second approval's delivery shows the refused attempts and the
      // one taken; sent again by hand, it arrives again with the same webhook-id.
      const second = accepted.filter((e) => e.type === 'partner.approved')[1]!;
      const ui = await signedIn(serve.url, reviewer.credential!);
      await ui.goto(`${serve.url}/ui/webhooks`);
      await ui.click(`tr:has-text("${second.id}") a[href^="/ui/webhooks/deliveries/"]`);
      const log = (await ui.textContent('main'))!;
      expect(log).toContain('delivered');
      expect(log).toContain('503');
      expect(log).toContain('204');
      await submit(ui, 'button:has-text("Send again")');
      await receiver.until(
        () => receiver.accepted().filter((e) => e.id === second.id).length >= 2,
        'the delivery sent again',
      );
      await ui.close();
    }, 240_000);
  },
);
