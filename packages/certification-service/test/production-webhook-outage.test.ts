import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ed25519Pem } from './support/in-process.js';
import { type Receiver, startReceiver } from './support/receiver.js';
import { reviewerForms } from './support/reviewer-forms.js';
import {
  adminJson,
  api,
  type CreatedRun,
  journeyEnv,
  referenceClient,
  runCommand,
  type ServeProcess,
  startServe,
} from './support/service.js';

// Issue 34's "the service SIGKILLed between a decision and its delivery and the receiver refusing for
// a minute: every event arrives, none twice with different ids", in a file of its own (so CI runs it
// beside the end-to-end test) on the embedded store. Two decisions are taken while the receiver
// refuses (503), the service is SIGKILLed right after the second and started again, and the receiver
// keeps refusing for a full minute from the first decision. The service runs with a documented faster
// retry schedule, `--webhook-retry-schedule 5,15,15,…` (the default's third retry comes 2.5 minutes
// after the first failure, the fourth 12.5 minutes after): a delivery is then tried again at most ~18 s
// after the receiver is back. Bounded: the whole file takes about 2 minutes.

const outageMs = 60_000;
const schedule = '5,15,15,15,15,15,15,15,15,15,15,15';

describe('webhooks through a SIGKILL and a one-minute receiver outage (embedded store)', () => {
  let dir: string;
  let env: Record<string, string>;
  let serve: ServeProcess | undefined;
  let receiver: Receiver & { setSecret(secret: string): void };
  const args = () => [
    '--data-dir',
    join(dir, 'data'),
    '--plan',
    join(dir, 'plan.json'),
    '--webhook-retry-schedule',
    schedule,
  ];
  const admin = (...args: string[]) => adminJson(args, { dataDir: join(dir, 'data'), env });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-webhook-outage-'));
    const keyFile = join(dir, 'attestation-key.pem');
    writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
    writeFileSync(
      join(dir, 'plan.json'),
      JSON.stringify({ id: 'outage-plan', operations: ['listLoans'], ttlSeconds: 2 }),
    );
    env = { SIGNING_KEY_FILE: keyFile, DATABASE_URL: '' };
    receiver = await startReceiver();
  });
  afterAll(async () => {
    receiver?.stop();
    await serve?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every event once the receiver is back, each under one webhook-id, in order', async () => {
    const partner = await admin('add-partner', '--name', 'Acme Lending');
    const reviewer = await admin('add-reviewer', '--name', 'Rita Reviewer');
    const hook = await admin('add-webhook', '--url', `${receiver.url}/hooks`);
    receiver.setSecret(hook.secret!);
    serve = await startServe({ cwd: dir, env, args: args() });
    expect(serve.output()).not.toContain(hook.secret!);

    const run: CreatedRun = (
      await api(serve.url, partner.apiKey, 'POST', '/api/runs', { certify: true })
    ).json();
    const journey = await runCommand(process.execPath, [referenceClient], {
      env: { ...journeyEnv(run), JOURNEY_SECONDS: '5' },
      timeoutMs: 60_000,
    });
    const judged = (
      await api(serve.url, partner.apiKey, 'POST', `/api/runs/${run.id}/finish`, {
        journeyExitCode: journey.code,
      })
    ).json();
    expect(judged.verdict).toBe('PASS');
    await receiver.until(
      () => receiver.accepted().some((e) => e.type === 'run.judged'),
      'run.judged before the outage',
    );

    // The outage starts; two decisions are taken; the service is SIGKILLed right after the second.
    await receiver.refuse(true);
    const outageStarted = Date.now();
    const forms = await reviewerForms(serve.url, reviewer.credential!);
    const approve = await forms.post(`/ui/runs/${run.id}`, `/ui/runs/${run.id}/decision`, {
      decision: 'approved',
      note: 'reference journey, every check passed',
    });
    expect(approve.status).toBe(303);
    const revoke = await forms.post(
      `/ui/partners/${partner.partnerId}/production`,
      `/ui/partners/${partner.partnerId}/revoke`,
      { decision: 'revoked', note: 'credentials leaked' },
    );
    expect(revoke.status).toBe(303);
    await serve.stop('SIGKILL');
    serve = await startServe({ cwd: dir, env, args: args() });
    const refusedBefore = receiver.lines.filter((l) => 'refused' in l).length;
    await receiver.until(
      (lines) => lines.filter((l) => 'refused' in l).length > refusedBefore,
      'an attempt after the restart',
      40_000,
    );
    // Nothing gets through while the receiver refuses.
    expect(receiver.accepted().filter((e) => e.type !== 'run.judged')).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, outageStarted + outageMs - Date.now())));
    const refusedDuringOutage = receiver.lines.filter((l) => 'refused' in l).length;
    await receiver.refuse(false);
    const outageMsMeasured = Date.now() - outageStarted;
    const back = Date.now();

    await receiver.until(
      () => receiver.accepted().some((e) => e.type === 'partner.revoked'),
      'partner.revoked after the outage',
      60_000,
    );
    const caughtUpMs = Date.now() - back;
    console.log(
      `receiver refused for ${outageMsMeasured} ms (${refusedDuringOutage} refused attempts, a SIGKILL between); every event delivered ${caughtUpMs} ms after it came back (schedule ${schedule})`,
    );
    expect(outageMsMeasured).toBeGreaterThanOrEqual(outageMs);
    // Attempts went on through the minute: the first, the 5-s retry, then 15-s ones (≥ 3 for the approval).
    expect(refusedDuringOutage).toBeGreaterThanOrEqual(3);

    // Every decision's event arrived, in the order taken, each under one webhook-id.
    const decisions = (await api(serve.url, partner.apiKey, 'GET', '/api/decisions')).json()
      .decisions as Array<{ id: string; decision: string }>;
    expect(decisions.map((d) => d.decision)).toEqual(['revoked', 'approved']);
    const accepted = receiver.accepted().filter((e) => e.type !== 'run.judged');
    const idsOf = new Map<string, Set<string>>();
    for (const event of accepted)
      idsOf.set(
        String(event.data.decisionId),
        (idsOf.get(String(event.data.decisionId)) ?? new Set()).add(event.id),
      );
    for (const decision of decisions) expect(idsOf.get(decision.id)?.size, decision.id).toBe(1);
    expect([...new Set(accepted.map((e) => e.type))]).toEqual(['partner.approved', 'partner.revoked']);
    // Every request the receiver saw was signed correctly (no rejection: the secret survived the restart).
    expect(receiver.lines.filter((l) => 'rejected' in l)).toEqual([]);

    // The delivery log: the approval's delivery shows its refused attempts (503) and the one taken (204).
    const approvedEvent = accepted.find((e) => e.type === 'partner.approved')!;
    const ui = await reviewerForms(serve.url, reviewer.credential!);
    const list = await ui.get('/ui/webhooks');
    const row = list.text.split('<tr>').find((r) => r.includes(approvedEvent.id)) ?? '';
    const href = /href="(\/ui\/webhooks\/deliveries\/[^"]+)"/.exec(row)?.[1];
    expect(href, 'the approval’s delivery in the log').toBeDefined();
    const log = (await ui.get(href!)).text;
    expect(log).toContain('delivered');
    expect(log.match(/<td>503<\/td>/g)?.length ?? 0).toBeGreaterThanOrEqual(3);
    expect(log).toContain('204');
  }, 200_000);
});
