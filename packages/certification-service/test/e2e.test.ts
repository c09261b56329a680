import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import {
  admin,
  api,
  bin,
  type CreatedRun,
  conformanceBin,
  curlJourney,
  journeyEnv,
  referenceClient,
  runCommand,
  runToken,
  startServe,
} from './support/service.js';

let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
});

// PostgreSQL shared by instances, and served by one instance with a journal directory.
const storages = ['embedded', 'postgres', 'postgres-journal'] as const;

describe.each(storages)('on %s storage', (storage) => {
  let dir: string;
  let env: Record<string, string>;
  let planArgs: string[];
  /** How serve is started on this storage (`args` after the storage's own). */
  const serve = (args: string[]) =>
    startServe({
      cwd: dir,
      env,
      args: [...(storage === 'postgres-journal' ? ['--journal-dir', join(dir, 'journal')] : []), ...args],
    });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `pcs-e2e-${storage}-`));
    // The operator's plan: the two operations a shell journey with the default grant exercises, short tokens.
    writeFileSync(
      join(dir, 'plan.json'),
      JSON.stringify({
        id: 'shell-two-ops',
        operations: ['listLoans', 'createLoanDraft'],
        scenarios: ['revocation', 'throttle', 'unavailable'],
        ttlSeconds: 3,
      }),
    );
    planArgs = ['--plan', join(dir, 'plan.json')];
    env = storage !== 'embedded' ? { DATABASE_URL: await postgres.database(`e2e_${Date.now()}`) } : {};
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serve starts with no configuration; the shipped curl-only journey certifies under the default plan; its attestation verifies offline, and a one-byte change to it does not', async () => {
    const { apiKey, partnerId } = await admin('add-partner', 'Acme Lending', { cwd: dir, env });
    // admin says which store it wrote to (a partner added in another shell must not land elsewhere).
    const reviewerAdded = await runCommand(
      process.execPath,
      [bin, 'admin', 'add-reviewer', '--name', 'Rita'],
      {
        cwd: dir,
        env: { DATABASE_URL: '', ...env },
      },
    );
    expect(reviewerAdded.code).toBe(0);
    expect(reviewerAdded.stderr).toMatch(
      storage !== 'embedded'
        ? /wrote reviewer rev_\S+ to PostgreSQL at 127\.0\.0\.1:/
        : /wrote reviewer rev_\S+ to embedded PGlite in /,
    );
    expect(reviewerAdded.stdout).toMatch(/reusable until replaced/);
    expect(apiKey).toMatch(/^pcs_key_/);
    // No --plan: the vendor's default plan (all four operations, every scenario, the narrowed grant).
    const service = await serve([]);
    try {
      expect(service.output()).toContain('generated an Ed25519 attestation key');
      const created = await api(service.url, apiKey, 'POST', '/api/runs', {
        certify: true,
        integration: { name: 'acme-shell', version: '1.2.3' },
      });
      expect(created.status).toBe(201);
      const run = created.json() as CreatedRun;
      expect(run.tokenUrl).toBe(`${run.authUrl}/oauth/token`);
      expect(run.audience).toBe(run.baseUrl);
      expect(run.baseUrl.startsWith(service.url)).toBe(true);

      const journey = await runCommand('sh', [curlJourney], {
        env: { ...journeyEnv(run), JOURNEY_SECONDS: '22' },
        timeoutMs: 75_000,
      });
      expect(journey.stderr).toBe('');
      expect(journey.code).toBe(0);

      const finished = await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
        journeyExitCode: 0,
      });
      expect(finished.status).toBe(200);
      const body = finished.json();
      expect(body.status).toBe('judged');
      const failed = body.report.checks.filter((check: { status: string }) => check.status !== 'passed');
      expect(failed.filter((check: { severity: string }) => check.severity === 'must')).toEqual([]);
      expect(body.verdict).toBe('PASS');
      expect(body.report.run).toEqual({ id: run.id, url: `${service.url}/api/runs/${run.id}` });
      expect(body.report.provenance.source).toBe('service');
      expect(body.report.integration).toEqual({ name: 'acme-shell', version: '1.2.3' });
      // Not vacuous: the journey exercised every operation, creates included, and every scenario fired.
      for (const operation of body.report.operations as Array<{ successes: number; exercised: boolean }>) {
        expect(operation.successes, JSON.stringify(operation)).toBeGreaterThan(0);
        expect(operation.exercised).toBe(true);
      }
      expect(
        body.report.scenarios.filter(
          (item: { enabled: boolean; firedAt?: number }) => item.enabled && item.firedAt === undefined,
        ),
      ).toEqual([]);
      expect(body.report.summary.passed).toBeGreaterThanOrEqual(14);
      // Under the vendor's default plan, the run is approvable; the partner and plan are named.
      expect(body.kind).toBe('certification');
      expect(body.notApprovable).toEqual([]);
      expect(body.approvable).toBe(true);
      expect(body.partner).toEqual({ id: partnerId, name: 'Acme Lending' });
      expect(body.plan.id).toMatch(/^partner-lending-default-v\d+$/);
      expect(body.plan.digest).toMatch(/^[0-9a-f]{64}$/);
      const covered = body.coverage.operations as Array<{ operationId: string; succeeded: number }>;
      expect(covered.map((item) => item.operationId).sort()).toEqual([
        'createJournalUpdate',
        'createLoanDraft',
        'createRepayment',
        'listLoans',
      ]);
      for (const item of covered) expect(item.succeeded, item.operationId).toBeGreaterThan(0);
      expect(body.decision).toBeNull();
      expect((await api(service.url, apiKey, 'GET', '/api/decisions')).json()).toEqual({ decisions: [] });

      const again = await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
      expect(again.status).toBe(409);
      expect(again.headers.get('content-type')).toBe('application/problem+json');

      const session = await api(service.url, apiKey, 'GET', `/api/runs/${run.id}/session`);
      const attestation = await api(service.url, apiKey, 'GET', `/api/runs/${run.id}/attestation`);
      expect(session.text).not.toContain(run.clientSecret);
      expect(session.text).not.toContain(apiKey);
      writeFileSync(join(dir, 'session.json'), session.text);
      writeFileSync(join(dir, 'attestation.json'), attestation.text);
      const keys = `${service.url}/.well-known/jwks.json`;
      const verified = await runCommand(process.execPath, [
        conformanceBin,
        'verify',
        join(dir, 'attestation.json'),
        '--keys',
        keys,
        '--session',
        join(dir, 'session.json'),
      ]);
      expect(verified.stdout).toContain('attestation holds');
      expect(verified.code).toBe(0);

      // One byte of the signed payload changed: the signature no longer holds.
      const envelope = JSON.parse(attestation.text);
      const payload = Buffer.from(envelope.payload, 'base64');
      payload[payload.indexOf('PASSED')] = 'Q'.charCodeAt(0);
      writeFileSync(
        join(dir, 'tampered.json'),
        JSON.stringify({ ...envelope, payload: payload.toString('base64') }),
      );
      const tampered = await runCommand(process.execPath, [
        conformanceBin,
        'verify',
        join(dir, 'tampered.json'),
        '--keys',
        keys,
      ]);
      expect(tampered.code).toBe(1);
      expect(tampered.stdout + tampered.stderr).toContain('does NOT hold');
      // One byte of the session changed: not the session attested.
      const bytes = Buffer.from(session.text);
      bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 1;
      writeFileSync(join(dir, 'session-edited.json'), bytes);
      const edited = await runCommand(process.execPath, [
        conformanceBin,
        'verify',
        join(dir, 'attestation.json'),
        '--keys',
        keys,
        '--session',
        join(dir, 'session-edited.json'),
      ]);
      expect(edited.code).toBe(1);

      const html = await fetch(`${service.url}/api/runs/${run.id}/report.html`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await html.text()).toContain('acme-shell');
      // Nothing secret in the service's own output.
      expect(service.output()).not.toContain(apiKey);
      expect(service.output()).not.toContain(run.clientSecret);
      expect(partnerId).toMatch(/^ptn_/);
    } finally {
      await service.stop();
    }
  });

  it('a journey that never calls and a journey with a bug are not certified: the pass above is not vacuous', async () => {
    const { apiKey } = await admin('add-partner', 'Vacuous Ltd', { cwd: dir, env });
    const service = await serve(planArgs);
    try {
      const idle = (
        await api(service.url, apiKey, 'POST', '/api/runs', { certify: true })
      ).json() as CreatedRun;
      const nothing = (
        await api(service.url, apiKey, 'POST', `/api/runs/${idle.id}/finish`, { journeyExitCode: 0 })
      ).json();
      expect(nothing.verdict).toBe('FAIL');
      expect(nothing.report.notVerified.length).toBeGreaterThan(0);

      const buggy = (
        await api(service.url, apiKey, 'POST', '/api/runs', { certify: true })
      ).json() as CreatedRun;
      const journey = await runCommand(process.execPath, [referenceClient], {
        env: { ...journeyEnv(buggy), BUG: 'token-in-query', JOURNEY_SECONDS: '4' },
        timeoutMs: 60_000,
      });
      const judged = (
        await api(service.url, apiKey, 'POST', `/api/runs/${buggy.id}/finish`, {
          journeyExitCode: journey.code,
        })
      ).json();
      expect(judged.verdict).toBe('FAIL');
      const red = judged.report.checks
        .filter((check: { status: string }) => check.status === 'failed')
        .map((check: { id: string }) => check.id);
      expect(red).toContain('client-token-not-in-url');
    } finally {
      await service.stop();
    }
  });

  it('SIGKILL mid-run loses no answered exchange; after a restart the run continues, and a run past its deadline is judged interrupted', async () => {
    const { apiKey } = await admin('add-partner', 'Killed Inc', { cwd: dir, env });
    // A fixed port: the run's addresses are the service's, and they stay the same across the restart.
    const port = String(await freePort());
    let service = await serve(['--max-run-duration', '600', '--port', port]);
    // A practice run (overrides allowed): no scenario, tokens that outlive the restart.
    const run = (
      await api(service.url, apiKey, 'POST', '/api/runs', { scenarios: [], ttlSeconds: 3600 })
    ).json() as CreatedRun;
    const token = await (await runToken(run, { scope: 'read:loans' })).json();
    let answered = 1; // the token request
    // Calls in flight all the time; SIGKILL lands while some are being answered.
    const call = () =>
      fetch(`${run.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
        headers: { authorization: `Bearer ${token.access_token}` },
      }).then(async (response) => {
        await response.arrayBuffer();
        answered += 1;
      });
    const load = (async () => {
      for (let i = 0; i < 400; i += 1) {
        const results = await Promise.allSettled([call(), call(), call()]);
        if (results.some((result) => result.status === 'rejected')) return;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await service.stop('SIGKILL');
    await load;
    expect(answered).toBeGreaterThan(10);
    // With a journal directory, the answers were written there (the next start replays them).
    if (storage === 'postgres-journal') expect(readdirSync(join(dir, 'journal')).length).toBeGreaterThan(0);

    service = await serve(['--max-run-duration', '600', '--port', port]);
    try {
      const status = (await api(service.url, apiKey, 'GET', `/api/runs/${run.id}`)).json();
      expect(status.status).toBe('open');
      // The run continues on the new process: the token issued before the kill still works.
      const more = await fetch(`${run.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
        headers: { authorization: `Bearer ${token.access_token}` },
      });
      expect(more.status).toBe(200);
      const judged = (await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {})).json();
      const session = (await api(service.url, apiKey, 'GET', `/api/runs/${run.id}/session`)).json();
      const okCalls = session.exchanges.filter(
        (exchange: { server: string; status: number }) =>
          exchange.server === 'api' && exchange.status === 200,
      );
      // Every call answered before the kill was recorded (the one after it too); a call cut off by the
      // kill may be recorded without its answer having arrived, never the other way round.
      expect(okCalls.length).toBeGreaterThanOrEqual(answered - 1 + 1);
      expect(judged.status).toBe('judged');
    } finally {
      await service.stop();
    }

    // A certification run open when the service died, past its deadline when it comes back, and its
    // journey calling on after the restart: interrupted, the late calls not recorded, never approvable.
    const deadlinePort = String(await freePort());
    const short = ['--max-run-duration', '3', '--port', deadlinePort, ...planArgs];
    service = await serve(short);
    const doomed = (
      await api(service.url, apiKey, 'POST', '/api/runs', { certify: true })
    ).json() as CreatedRun;
    const askToken = () =>
      fetch(doomed.tokenUrl, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: doomed.clientId,
          client_secret: doomed.clientSecret,
        }),
      });
    expect((await askToken()).status).toBe(200);
    await service.stop('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 3500));
    service = await serve(short);
    try {
      // The journey goes on after the restart: refused, not recorded.
      for (let i = 0; i < 3; i += 1) expect((await askToken()).status).toBe(404);
      let state: any = {};
      for (let i = 0; i < 40 && state.status !== 'interrupted'; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        state = (await api(service.url, apiKey, 'GET', `/api/runs/${doomed.id}`)).json();
      }
      expect(state.status).toBe('interrupted');
      expect(state.kind).toBe('certification');
      expect(state.approvable).toBe(false);
      expect(state.notApprovable.join(' ')).toContain('interrupted');
      expect(state.report.journey.calls.token).toBe(1);
      const attestation = await api(service.url, apiKey, 'GET', `/api/runs/${doomed.id}/attestation`);
      expect(attestation.status).toBe(200);
    } finally {
      await service.stop();
    }
  });
});

describe('serve and admin on the embedded store', () => {
  it('admin refuses clearly while serve holds the embedded store, and works once it stopped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-lock-'));
    try {
      const service = await startServe({ cwd: dir });
      const refused = await runCommand(
        process.execPath,
        [
          fileURLToPath(new URL('../bin/partner-certification-service.js', import.meta.url)),
          'admin',
          'add-partner',
          '--name',
          'X',
        ],
        {
          cwd: dir,
          env: { DATABASE_URL: '' },
        },
      );
      expect(refused.code).toBe(3);
      expect(refused.stderr).toMatch(/in use by process \d+.*Stop the service before running admin commands/);
      await service.stop();
      const added = await admin('add-partner', 'X', { cwd: dir });
      expect(added.partnerId).toMatch(/^ptn_/);
      // A store whose owner was SIGKILLed is taken over (its lock is stale).
      const killed = await startServe({ cwd: dir });
      await killed.stop('SIGKILL');
      expect((await admin('add-partner', 'Y', { cwd: dir })).partnerId).toMatch(/^ptn_/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says what is wrong with a bad flag, command or key file, with exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-usage-'));
    const bin = fileURLToPath(new URL('../bin/partner-certification-service.js', import.meta.url));
    try {
      const cases: Array<[string[], Record<string, string>, RegExp]> = [
        [['serve', '--port', 'abc'], {}, /--port takes 0 to 65535/],
        [['serve', '--public-url', 'https://x.example/path'], {}, /--public-url takes an http\(s\) origin/],
        [['serve', '--idle-timeout', '0'], {}, /--idle-timeout takes a whole number/],
        [['frobnicate'], {}, /unknown command "frobnicate"/],
        [['admin', 'add-partner'], {}, /needs --name/],
        [
          ['serve', '--port', '0'],
          { SIGNING_KEY_FILE: join(dir, 'missing.pem') },
          /SIGNING_KEY_FILE .* cannot be read/,
        ],
        [['serve', '--port', '0'], { DATABASE_URL: 'mysql://x' }, /expected postgres:\/\//],
        [['serve', '--plan', join(dir, 'no-plan.json')], {}, /--plan .*no-plan\.json: cannot read it/],
        [
          ['serve', '--plan', join(dir, 'bad-plan.json')],
          {},
          /--plan .*bad-plan\.json: certification plan: operation "getEverything" is not one of the API's/,
        ],
        [['admin', 'add-partner', '--name', 'X', '--plan', 'p.json'], {}, /--plan is an option of serve/],
        [
          ['serve', '--journal-dir', join(dir, 'j')],
          {},
          /--journal-dir is for PostgreSQL \(set DATABASE_URL\)/,
        ],
        [
          ['admin', 'add-partner', '--name', 'X', '--journal-dir', join(dir, 'j')],
          {},
          /--journal-dir is an option of serve/,
        ],
      ];
      writeFileSync(join(dir, 'bad-plan.json'), JSON.stringify({ id: 'bad', operations: ['getEverything'] }));
      for (const [args, extra, message] of cases) {
        const result = await runCommand(process.execPath, [bin, ...args], {
          cwd: dir,
          env: { DATABASE_URL: '', SIGNING_KEY_FILE: '', ...extra },
        });
        expect(result.stderr, args.join(' ')).toMatch(message);
        expect(result.code, args.join(' ')).toBe(2);
      }
      // An RSA key is not one attestations are signed with.
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      writeFileSync(join(dir, 'rsa.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
      const rsa = await runCommand(process.execPath, [bin, 'serve', '--port', '0'], {
        cwd: dir,
        env: { DATABASE_URL: '', SIGNING_KEY_FILE: join(dir, 'rsa.pem') },
      });
      expect(rsa.code).toBe(2);
      expect(rsa.stderr).toMatch(/Ed25519|ES256|P-256/);
      expect(rsa.stderr).not.toContain('PRIVATE KEY');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
