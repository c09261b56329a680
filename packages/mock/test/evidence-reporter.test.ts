import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type EvidenceOptions, type MockClient, type RunningMock, startMock } from '../src/index.js';
import { credentials, loansUrl, sharedSigningKey, tokenRequest } from './helpers.js';
import {
  attributesOf,
  type EvidenceReceiver,
  type ReceiverMode,
  startEvidenceReceiver,
  takenRecords,
} from './support/evidence-receiver.js';
import { type RegisterServer, startRegisterServer } from './support/register-server.js';

// The production gate's evidence report against a real receiver on 127.0.0.1 answering as the
// certification service does (200, 429 and 503 with Retry-After, 400, or never), with the real gate
// serving real token and API calls. Short intervals (50 ms batches, 50 ms first retry) keep it quick;
// nothing is asserted on durations: what is counted is what was answered, sent, held and dropped.

const partner: MockClient = {
  partnerId: 'ptn_evidence',
  clientId: 'client-evidence',
  clientSecret: 'secret-evidence-0123456789',
  authorizedScopes: ['read:loans', 'create:loan_draft'],
};
const reporterKey = 'er_test_reporter_key_0123456789';
const fingerprintKey = 'fk_test_fingerprint_key_0123456789abcdef';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const until = async (probe: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!probe() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return probe();
};

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'partner-mock-evidence-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

async function registerServer(): Promise<RegisterServer> {
  const register = await startRegisterServer();
  cleanups.push(() => register.close());
  register.state.partners = [
    {
      partnerId: partner.partnerId,
      name: 'Evidence Lending',
      status: 'active',
      scopes: ['read:loans', 'create:loan_draft'],
      validUntil: null,
      decisionId: 'dec_evidence',
    },
  ];
  return register;
}

async function receiver(mode: ReceiverMode = { kind: 'ok' }): Promise<EvidenceReceiver> {
  const started = await startEvidenceReceiver(mode);
  cleanups.push(() => started.close());
  return started;
}

interface Gate {
  mock: RunningMock;
  logs: string[];
  token(scope?: string): ReturnType<typeof tokenRequest>;
  loans(token: string, query?: string): Promise<number>;
}

async function startGate(
  register: RegisterServer,
  evidence: Partial<EvidenceOptions> | undefined,
  at: EvidenceReceiver | undefined,
): Promise<Gate> {
  const logs: string[] = [];
  const mock = await startMock({
    profile: 'production',
    clients: [partner],
    signingKey: await sharedSigningKey(),
    register: { url: register.registerUrl, key: register.key, changes: false },
    ...(evidence !== undefined &&
      at !== undefined && {
        evidence: {
          url: at.url,
          key: reporterKey,
          fingerprintKey,
          flushIntervalMs: 50,
          retryBaseMs: 50,
          retryMaxMs: 400,
          timeoutMs: 2000,
          closeGraceMs: 300,
          onLog: (line) => logs.push(line),
          ...evidence,
        },
      }),
  });
  cleanups.push(() => mock.close());
  return {
    mock,
    logs,
    token: (scope) => tokenRequest(mock, credentials(mock, partner, { scope })),
    loans: async (token, query = '?limit=2') => {
      const response = await fetch(loansUrl(mock, partner.partnerId, query), {
        headers: { authorization: `Bearer ${token}` },
      });
      await response.arrayBuffer();
      return response.status;
    },
  };
}

const hmac = (token: string) =>
  createHmac('sha256', fingerprintKey).update(token).digest().subarray(0, 16).toString('base64url');

describe('evidence: what the gate reports', () => {
  it('sends each token issue and API call as an OTLP/HTTP JSON log record, the token as a keyed fingerprint only', async () => {
    const register = await registerServer();
    const at = await receiver();
    const gate = await startGate(register, {}, at);
    const issued = await gate.token('read:loans');
    expect(issued.status).toBe(200);
    const token = issued.body.access_token as string;
    expect(await gate.loans(token, '?limit=2&offset=1')).toBe(200);
    // Refused at the API (no scope): reported with its error; an unknown client is nobody's evidence.
    const draft = await fetch(`${gate.mock.baseUrl}/v3/partner/${partner.partnerId}/loan_draft`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(draft.status).toBe(403);
    const stranger = await tokenRequest(
      gate.mock,
      credentials(gate.mock, { ...partner, clientId: 'who', clientSecret: 'x' }),
    );
    expect(stranger.status).toBe(401);
    expect(await until(() => takenRecords(at).length === 3)).toBe(true);

    const [issue, call, refused] = takenRecords(at);
    expect(issue).toEqual({
      'partner.id': partner.partnerId,
      'http.request.method': 'POST',
      'url.path': '/oauth/token',
      'http.response.status_code': 200,
      'token.fingerprint': hmac(token),
      'oauth.grant_type': 'client_credentials',
      'oauth.scope.granted': 'read:loans',
      'oauth.token.expires_in': issued.body.expires_in,
    });
    expect(call).toEqual({
      'partner.id': partner.partnerId,
      'http.request.method': 'GET',
      'url.path': `/v3/partner/${partner.partnerId}/loans`,
      'http.response.status_code': 200,
      'token.fingerprint': hmac(token),
    });
    expect(refused).toMatchObject({
      'http.response.status_code': 403,
      'error.type': 'insufficient_scope',
      'token.fingerprint': hmac(token),
    });
    // The fingerprint is 128 bits, neither the token nor a plain hash of it.
    const sent = JSON.stringify(at.attempts.map((attempt) => attempt.body));
    expect(hmac(token)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(sent).not.toContain(token);
    expect(sent).not.toContain(createHash('sha256').update(token).digest('base64url').slice(0, 22));
    expect(sent).not.toContain(partner.clientSecret);
    // The OTLP shape, the reporter key as a bearer token, one Idempotency-Key per batch.
    const first = at.attempts[0]!;
    expect(first.authorization).toBe(`Bearer ${reporterKey}`);
    expect(first.contentType).toBe('application/json');
    const logRecord = first.body.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!;
    expect(logRecord.timeUnixNano).toMatch(/^\d{19}$/);
    expect(attributesOf(first.body.resourceLogs[0]!.resource.attributes)).toEqual({
      'service.name': 'partner-mock',
    });
    const keys = at.attempts.map((attempt) => attempt.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.every((key) => typeof key === 'string' && key.length >= 22)).toBe(true);
    // The receiver took them; the gate counts them once it has read the answer.
    expect(await until(() => gate.mock.evidenceStatus()?.sent.records === 3)).toBe(true);
    expect(gate.mock.evidenceStatus()).toMatchObject({
      state: 'idle',
      sent: { records: 3 },
      dropped: { total: 0 },
      fingerprintKey: 'given',
    });
    // The reporter key is never in a log line nor in the status.
    expect(JSON.stringify([gate.logs, gate.mock.evidenceStatus()])).not.toContain(reporterKey);
  });

  it('reports a refused token request with its grant type and error, and an expired token by the partner it names', async () => {
    const register = await registerServer();
    const at = await receiver();
    const clock = { now: Date.now() };
    register.state.now = () => clock.now;
    const logs: string[] = [];
    const mock = await startMock({
      profile: 'production',
      clients: [partner],
      signingKey: await sharedSigningKey(),
      tokenTtlSeconds: 60,
      clock: () => clock.now,
      register: { url: register.registerUrl, key: register.key, changes: false },
      evidence: {
        url: at.url,
        key: reporterKey,
        fingerprintKey,
        flushIntervalMs: 50,
        onLog: (line) => logs.push(line),
      },
    });
    cleanups.push(() => mock.close());
    const unsupported = await tokenRequest(mock, credentials(mock, partner, { grant_type: 'password' }));
    expect(unsupported.status).toBe(400);
    const token = (await tokenRequest(mock, credentials(mock, partner))).body.access_token as string;
    clock.now += 61_000;
    const expired = await fetch(loansUrl(mock, partner.partnerId), {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(expired.status).toBe(401);
    // A token no key of the gate signed names nobody: not reported.
    const [head, payload] = token.split('.');
    const forged = await fetch(loansUrl(mock, partner.partnerId), {
      headers: { authorization: `Bearer ${head}.${payload}.AAAA` },
    });
    expect(forged.status).toBe(401);
    expect(await until(() => takenRecords(at).length === 3)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const records = takenRecords(at);
    expect(records).toHaveLength(3);
    expect(records[0]).toEqual({
      'partner.id': partner.partnerId,
      'http.request.method': 'POST',
      'url.path': '/oauth/token',
      'http.response.status_code': 400,
      'oauth.grant_type': 'password',
      'error.type': 'unsupported_grant_type',
    });
    expect(records[2]).toMatchObject({
      'http.response.status_code': 401,
      'error.type': 'invalid_token',
      'token.fingerprint': hmac(token),
    });
  });

  it('reports the Retry-After the gate gave: a 503 while no register can be read says Retry-After: 1', async () => {
    const register = await registerServer();
    register.state.tamper = true;
    const at = await receiver();
    const gate = await startGate(register, {}, at);
    const unavailable = await gate.token();
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBe('1');
    // Control: a token issued gives none.
    register.state.tamper = false;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => takenRecords(at).length === 2)).toBe(true);
    const [refused, issued] = takenRecords(at);
    expect(refused).toMatchObject({
      'http.response.status_code': 503,
      'error.type': 'temporarily_unavailable',
      'http.response.header.retry-after': ['1'],
    });
    expect(issued).not.toHaveProperty('http.response.header.retry-after');
  });

  it('refuses evidence outside the production profile and bad options, saying what is expected', async () => {
    await expect(
      startMock({ evidence: { url: 'http://127.0.0.1:1/evidence', key: reporterKey } }),
    ).rejects.toThrow("evidence is for the 'production' profile only");
    const register = await registerServer();
    const base = {
      profile: 'production' as const,
      clients: [partner],
      register: { url: register.registerUrl, key: register.key, changes: false },
    };
    await expect(
      startMock({ ...base, evidence: { url: 'https://user:pw@certify.example/evidence', key: reporterKey } }),
    ).rejects.toThrow('evidence.url must be an http(s) URL without credentials');
    await expect(
      startMock({
        ...base,
        evidence: { url: 'https://certify.example/evidence', key: reporterKey, fingerprintKey: 'short' },
      }),
    ).rejects.toThrow('evidence.fingerprintKey must be one word of at least 32 characters');
    await expect(
      startMock({
        ...base,
        evidence: { url: 'https://certify.example/evidence', key: reporterKey, bufferRecords: 0 },
      }),
    ).rejects.toThrow('evidence.bufferRecords must be an integer from 1 to 10000000, got 0.');
  });
});

describe('evidence: the sender', () => {
  it.each([
    ['429 with Retry-After', { kind: 'busy', status: 429, retryAfter: '1' } as const],
    ['503 without Retry-After', { kind: 'busy', status: 503 } as const],
  ])('sends a batch again after %s, with the same Idempotency-Key and body', async (_name, busy) => {
    const register = await registerServer();
    const at = await receiver(busy);
    const gate = await startGate(register, {}, at);
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => at.attempts.length >= 2)).toBe(true);
    expect(gate.mock.evidenceStatus()).toMatchObject({
      state: expect.stringMatching(/^(retrying|sending)$/),
      pending: 1,
    });
    at.mode = { kind: 'ok' };
    expect(await until(() => at.taken.size === 1)).toBe(true);
    expect(await until(() => gate.mock.evidenceStatus()?.pending === 0)).toBe(true);
    const keys = new Set(at.attempts.map((attempt) => attempt.idempotencyKey));
    expect(keys.size).toBe(1);
    expect(new Set(at.attempts.map((attempt) => JSON.stringify(attempt.body))).size).toBe(1);
    expect(gate.mock.evidenceStatus()).toMatchObject({
      state: 'idle',
      pending: 0,
      sent: { records: 1, batches: 1 },
    });
    expect(gate.logs.some((line) => line.includes(`answered ${busy.status}`))).toBe(true);
  });

  it('honours Retry-After: a 429 asking for 1 s is not asked again within it, a 503 without it is (control)', async () => {
    const register = await registerServer();
    const slow = await receiver({ kind: 'busy', status: 429, retryAfter: '1' });
    const quick = await receiver({ kind: 'busy', status: 503 });
    const gateSlow = await startGate(register, { retryMaxMs: 5000 }, slow);
    const gateQuick = await startGate(register, { retryMaxMs: 5000 }, quick);
    expect((await gateSlow.token()).status).toBe(200);
    expect((await gateQuick.token()).status).toBe(200);
    expect(await until(() => slow.attempts.length >= 1 && quick.attempts.length >= 1)).toBe(true);
    // Both counted over the same wall-clock window: about 0.6 s.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(slow.attempts.length).toBe(1);
    expect(quick.attempts.length).toBeGreaterThanOrEqual(3);
  });

  it('drops a batch the service refuses for good (400), counts it, and goes on', async () => {
    const register = await registerServer();
    const at = await receiver({ kind: 'refuse', status: 400 });
    const gate = await startGate(register, {}, at);
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => gate.mock.evidenceStatus()?.dropped.refused === 1)).toBe(true);
    expect(gate.logs.join('\n')).toContain('answered 400');
    expect(gate.logs.join('\n')).toContain('the batch is not OTLP logs');
    at.mode = { kind: 'ok' };
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => at.taken.size === 1)).toBe(true);
    // The next batch says one exchange was lost before it.
    const [batch] = [...at.taken.values()];
    expect(attributesOf(batch!.resourceLogs[0]!.resource.attributes)).toMatchObject({
      'partner_lending.evidence.dropped': 1,
    });
    expect(at.attempts.filter((attempt) => attempt.status === 400)).toHaveLength(1);
  });

  it('counts the records an OTLP partialSuccess rejects', async () => {
    const register = await registerServer();
    const at = await receiver({ kind: 'ok', rejected: 1 });
    const gate = await startGate(register, {}, at);
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => gate.mock.evidenceStatus()?.dropped.refused === 1)).toBe(true);
    expect(gate.mock.evidenceStatus()?.lastError).toContain('rejected 1 record(s) of a batch: bad path');
  });

  it('never makes a production call wait: a hung service leaves every call answered, as with evidence off', async () => {
    const register = await registerServer();
    const hung = await receiver({ kind: 'hang' });
    const withEvidence = await startGate(register, { timeoutMs: 60_000 }, hung);
    const control = await startGate(register, undefined, undefined);
    const calls = 40;
    const run = async (gate: Gate) => {
      const answers = await Promise.all(
        Array.from({ length: calls }, async () => {
          const issued = await gate.token();
          return [issued.status, await gate.loans(issued.body.access_token as string)];
        }),
      );
      return answers.flat().filter((status) => status === 200).length;
    };
    // Interleaved: the control and the gate reporting to the hung service answer the same calls.
    const answered = { evidence: 0, control: 0 };
    for (let round = 0; round < 3; round += 1) {
      answered.evidence += await run(withEvidence);
      answered.control += await run(control);
    }
    expect(answered).toEqual({ evidence: 3 * calls * 2, control: 3 * calls * 2 });
    expect(await until(() => hung.held.size === 1)).toBe(true);
    // One batch in flight at a time; everything else is held, nothing sent or dropped.
    expect(hung.attempts).toHaveLength(1);
    await until(() => withEvidence.mock.evidenceStatus()?.buffered === 0);
    expect(withEvidence.mock.evidenceStatus()).toMatchObject({
      state: 'sending',
      buffered: 0,
      pending: 3 * calls * 2,
      sent: { records: 0 },
      dropped: { total: 0 },
    });
    expect(control.mock.evidenceStatus()).toBeUndefined();
  }, 60_000);

  it('drops past the buffer bound, counts it, logs it, and the next batch carries the count', async () => {
    const register = await registerServer();
    const at = await receiver({ kind: 'busy', status: 503 });
    const gate = await startGate(register, { bufferRecords: 5 }, at);
    for (let i = 0; i < 12; i += 1) expect((await gate.token()).status).toBe(200);
    expect(gate.mock.evidenceStatus()).toMatchObject({ dropped: { bufferFull: 7, total: 7 } });
    expect(await until(() => gate.logs.some((line) => line.includes('dropped')))).toBe(true);
    expect(gate.logs.find((line) => line.includes('dropped'))).toMatch(
      /^\d exchange\(s\) dropped since the last report \(\d since start: buffer full \d, spool full 0, refused by the service 0\)/,
    );
    at.mode = { kind: 'ok' };
    expect(await until(() => gate.mock.evidenceStatus()?.pending === 0)).toBe(true);
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => takenRecords(at).length === 6)).toBe(true);
    const drops = [...at.taken.values()].map(
      (body) => attributesOf(body.resourceLogs[0]!.resource.attributes)['partner_lending.evidence.dropped'],
    );
    // Each drop is carried by the first batch formed after it: 7 in all, none twice.
    expect(drops.reduce<number>((sum, count) => sum + Number(count ?? 0), 0)).toBe(7);
    // At close, a last line with the totals (lines are at most one per 10 s before it).
    await gate.mock.close();
    expect(gate.logs.filter((line) => line.includes('dropped')).at(-1) ?? '').toMatch(
      /\(7 since start: buffer full 7, spool full 0, refused by the service 0\)|^7 exchange/,
    );
  });
});

describe('evidence: the spool', () => {
  it('keeps what was not acknowledged across a stop, and the next start sends it with the same Idempotency-Key', async () => {
    const register = await registerServer();
    const spoolFile = join(temporaryDirectory(), 'evidence.spool');
    const down = await receiver({ kind: 'busy', status: 503 });
    const first = await startGate(register, { spoolFile }, down);
    for (let i = 0; i < 3; i += 1) expect((await first.token()).status).toBe(200);
    expect(await until(() => down.attempts.length >= 1 && first.mock.evidenceStatus()?.buffered === 0)).toBe(
      true,
    );
    await first.mock.close();
    expect(first.logs.join('\n')).toContain(`stay in ${spoolFile} and are sent at the next start`);
    const spooled = readFileSync(spoolFile, 'utf8');
    expect(spooled).not.toContain(partner.clientSecret);
    const keysBefore = new Set(down.attempts.map((attempt) => attempt.idempotencyKey));

    const up = await receiver();
    const second = await startGate(register, { spoolFile }, up);
    expect(await until(() => takenRecords(up).length === 3)).toBe(true);
    // A batch the service was already asked to take comes again under the same key (it dedupes).
    expect([...keysBefore].every((key) => key !== undefined && up.taken.has(key))).toBe(true);
    expect(second.logs.join('\n')).toContain('sending first the 3 exchange(s)');
    // Acknowledged: the spool is emptied.
    expect(await until(() => readFileSync(spoolFile, 'utf8') === '')).toBe(true);
    await second.mock.close();
    // Control: a third start has nothing to send again.
    const again = await receiver();
    await startGate(register, { spoolFile }, again);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(again.attempts).toHaveLength(0);
  });

  it('without a spool, a stop loses what was not acknowledged, and says how much', async () => {
    const register = await registerServer();
    const down = await receiver({ kind: 'busy', status: 503 });
    const gate = await startGate(register, {}, down);
    for (let i = 0; i < 2; i += 1) expect((await gate.token()).status).toBe(200);
    await gate.mock.close();
    expect(gate.logs.join('\n')).toContain(
      '2 exchange(s) were not acknowledged before the gate stopped and are lost',
    );
  });

  it('skips a torn last line (a gate killed while writing) and sends the rest', async () => {
    const register = await registerServer();
    const spoolFile = join(temporaryDirectory(), 'evidence.spool');
    const down = await receiver({ kind: 'busy', status: 503 });
    const first = await startGate(register, { spoolFile }, down);
    expect((await first.token()).status).toBe(200);
    expect(await until(() => down.attempts.length >= 1)).toBe(true);
    await first.mock.close();
    const { appendFileSync } = await import('node:fs');
    appendFileSync(spoolFile, '{"id":"torn","dropped":0,"records":[{"at":1');
    const up = await receiver();
    const second = await startGate(register, { spoolFile }, up);
    expect(await until(() => takenRecords(up).length === 1)).toBe(true);
    expect(second.logs.join('\n')).toContain('held 1 damaged line(s), skipped');
  });

  it('drops and counts what does not fit in a full spool', async () => {
    const register = await registerServer();
    const spoolFile = join(temporaryDirectory(), 'evidence.spool');
    const down = await receiver({ kind: 'busy', status: 503 });
    // After its first 503 the sender waits a minute before it sends again, so that the endpoint's error
    // cannot overwrite the spool's as the last one (the test's first batch is refused before the rest
    // is sent).
    const gate = await startGate(
      register,
      { spoolFile, spoolMaxBytes: 4096, batchRecords: 2, retryBaseMs: 60_000, retryMaxMs: 60_000 },
      down,
    );
    expect((await gate.token()).status).toBe(200);
    expect(await until(() => gate.mock.evidenceStatus()?.state === 'retrying')).toBe(true);
    expect(gate.mock.evidenceStatus()?.lastError).toContain('answered 503');
    for (let i = 1; i < 30; i += 1) expect((await gate.token()).status).toBe(200);
    expect(await until(() => (gate.mock.evidenceStatus()?.dropped.spoolFull ?? 0) > 0)).toBe(true);
    await until(() => gate.mock.evidenceStatus()?.buffered === 0);
    const status = gate.mock.evidenceStatus()!;
    expect(status.spool!.bytes).toBeLessThanOrEqual(4096);
    expect(status.pending + status.dropped.spoolFull).toBe(30);
    expect(status.lastError).toContain('is full (4096 bytes)');
  });

  it('refuses a spool that is not a regular file, naming it', async () => {
    const register = await registerServer();
    const directory = temporaryDirectory();
    const at = await receiver();
    await expect(startGate(register, { spoolFile: directory }, at)).rejects.toMatchObject({
      code: 'ERR_MOCK_EVIDENCE_SPOOL',
      message: `the evidence spool ${directory} is not a regular file; give the path of a file (it is created when missing).`,
    });
  });
});
