import { readdirSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evidenceMetrics } from '../src/evidence/metrics.js';
import { queuedExchange } from '../src/evidence/store.js';
import { addEvidenceReporter, purgeEvidence } from '../src/index.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { exchangeAttributes, otlpJson, postEvidence, storedExchanges } from './support/evidence.js';
import { type InProcessService, inProcessService } from './support/in-process.js';

// POST /evidence on one instance over the embedded store: who may send, what is stored and what never
// is, a batch counted once, the bounds checked before decoding, and the answers under pressure.
let svc: InProcessService;
let url: string;
let key: string;
let partnerA: { partnerId: string; apiKey: string };
let partnerB: { partnerId: string; apiKey: string };

const at = Date.UTC(2026, 10, 1, 12, 0, 0);
const count = async (
  counter: { get(): Promise<{ values: { value: number; labels: object }[] }> },
  labels = {},
) =>
  (await counter.get()).values
    .filter((value) =>
      Object.entries(labels).every(
        ([name, wanted]) => (value.labels as Record<string, unknown>)[name] === wanted,
      ),
    )
    .reduce((sum, value) => sum + value.value, 0);

beforeAll(async () => {
  svc = await inProcessService({ evidence: { maxInFlight: 1 } });
  url = svc.service.url;
  partnerA = await svc.partner('Acme Lending');
  partnerB = await svc.partner('Bolt Credit');
  ({ key } = await addEvidenceReporter(svc.db, 'production gateway'));
}, 120_000);
afterAll(async () => {
  await svc?.close();
});

describe('POST /evidence: who may send', () => {
  const body = () =>
    otlpJson([{ at, attributes: exchangeAttributes(partnerA.partnerId, { 'url.path': '/who' }) }]);

  it('refuses a request without a key, with a wrong key, a partner API key or a register key (401)', async () => {
    const { key: registerKey } = await addRegisterReader(svc.db, 'gate');
    for (const attempt of [undefined, 'pcs_evidence_wrong', partnerA.apiKey, registerKey]) {
      const answer = await postEvidence(url, body(), attempt === undefined ? {} : { key: attempt });
      expect(answer.status, String(attempt).slice(0, 12)).toBe(401);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm="partner-evidence"/);
      expect((await answer.json()).detail).toMatch(/evidence reporter key/);
    }
    expect(await storedExchanges(svc.db, partnerA.partnerId)).toEqual([]);
  });

  it('takes the same batch with a reporter key (control)', async () => {
    const answer = await postEvidence(url, body(), { key });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({});
    expect((await storedExchanges(svc.db, partnerA.partnerId)).map((row) => row.path)).toEqual(['/who']);
  });
});

describe('POST /evidence: what is stored', () => {
  it('reads every attribute into the exchange, and keeps neither the body nor other attributes', async () => {
    const received = await count(evidenceMetrics.received);
    const answer = await postEvidence(
      url,
      otlpJson([
        {
          at: at + 1000,
          attributes: exchangeAttributes(partnerB.partnerId, {
            'http.request.method': 'POST',
            'url.path': '/oauth/token?foo=bar',
            'oauth.grant_type': 'client_credentials',
            'oauth.scope.granted': 'loans:read loans:write',
            'oauth.token.expires_in': 300,
            'token.fingerprint': 'fp-issued',
            'client.address': '10.0.0.7',
          }),
        },
        {
          at: at + 2000,
          attributes: exchangeAttributes(partnerB.partnerId, {
            'http.response.status_code': 429,
            'http.response.header.retry-after': ['7'],
            'error.type': 'rate_limited',
            'oauth.scope.granted': ['loans:read'],
          }),
        },
      ]),
      { key },
    );
    expect(answer.status).toBe(200);
    const rows = await storedExchanges(svc.db, partnerB.partnerId);
    expect(rows).toEqual([
      expect.objectContaining({
        kind: 'token',
        method: 'POST',
        path: '/oauth/token',
        status: 200,
        fingerprint: 'fp-issued',
        scopes_granted: ['loans:read', 'loans:write'],
        expires_at: at + 1000 + 300_000,
        retry_after_seconds: null,
        error: null,
      }),
      expect.objectContaining({
        kind: 'api',
        status: 429,
        retry_after_seconds: 7,
        error: 'rate_limited',
        scopes_granted: ['loans:read'],
      }),
    ]);
    expect(await count(evidenceMetrics.received)).toBe(received + 2);
    const text = JSON.stringify(await svc.db.query('SELECT * FROM evidence_exchanges'));
    expect(text).not.toContain('10.0.0.7');
    expect(text).not.toContain('served');
  });

  it('rejects records missing or misusing an attribute, with the reason, and stores the rest', async () => {
    const before = await count(evidenceMetrics.rejected, { reason: 'missing_attribute' });
    const { 'partner.id': _, ...noPartner } = exchangeAttributes(partnerA.partnerId);
    const answer = await postEvidence(
      url,
      otlpJson([
        { at, attributes: noPartner },
        {
          at,
          attributes: exchangeAttributes(partnerA.partnerId, { 'http.response.status_code': 'two hundred' }),
        },
        { attributes: exchangeAttributes(partnerA.partnerId) },
        { at, attributes: exchangeAttributes(partnerA.partnerId, { 'url.path': '/kept' }) },
      ]),
      { key },
    );
    expect(answer.status).toBe(200);
    const { partialSuccess } = await answer.json();
    expect(partialSuccess.rejectedLogRecords).toBe(3);
    expect(partialSuccess.errorMessage).toContain('1 × a record lacks partner.id');
    expect(partialSuccess.errorMessage).toContain('http.response.status_code must be');
    expect(partialSuccess.errorMessage).toContain('neither timeUnixNano nor observedTimeUnixNano');
    expect(await count(evidenceMetrics.rejected, { reason: 'missing_attribute' })).toBe(before + 1);
    expect((await storedExchanges(svc.db, partnerA.partnerId)).map((row) => row.path)).toContain('/kept');
  });

  it('counts and drops evidence about a partner the service does not know', async () => {
    const dropped = await count(evidenceMetrics.dropped);
    const answer = await postEvidence(
      url,
      otlpJson([
        { at, attributes: exchangeAttributes('ptn_nobody', { 'url.path': '/unknown' }) },
        { at, attributes: exchangeAttributes(partnerA.partnerId, { 'url.path': '/known' }) },
      ]),
      { key },
    );
    const { partialSuccess } = await answer.json();
    expect(partialSuccess).toEqual({
      rejectedLogRecords: 1,
      errorMessage: '1 × a record names a partner (partner.id) this service does not know: dropped',
    });
    expect(await count(evidenceMetrics.dropped)).toBe(dropped + 1);
    expect(await svc.db.query("SELECT 1 FROM evidence_exchanges WHERE partner_id = 'ptn_nobody'")).toEqual(
      [],
    );
    // Control: the known partner's record of the same batch was stored.
    expect((await storedExchanges(svc.db, partnerA.partnerId)).map((row) => row.path)).toContain('/known');
  });
});

describe('POST /evidence: tokens are never stored', () => {
  const jwt = [
    Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'at+jwt' })).toString('base64url'),
    Buffer.from(JSON.stringify({ sub: 'marker-subject-93f1', exp: 2_000_000_000 })).toString('base64url'),
    'c2lnbmF0dXJlLW1hcmtlci05M2Yx',
  ].join('.');
  const opaque = 'opaque-token-marker-7c2e41d9';

  it('rejects a record with an authorization or access_token attribute, or a JWT anywhere in its attributes', async () => {
    const before = await count(evidenceMetrics.rejected, { reason: 'token_like' });
    const answer = await postEvidence(
      url,
      otlpJson([
        {
          at,
          attributes: exchangeAttributes(partnerA.partnerId, {
            'http.request.header.authorization': [`Bearer ${opaque}`],
          }),
        },
        { at, attributes: exchangeAttributes(partnerA.partnerId, { access_token: opaque }) },
        { at, attributes: exchangeAttributes(partnerA.partnerId, { 'token.fingerprint': jwt }) },
        { at, attributes: exchangeAttributes(partnerA.partnerId, { details: { nested: [jwt] } }) },
        {
          at,
          attributes: exchangeAttributes(partnerA.partnerId, {
            'url.path': '/marker-path-5d0b',
            'token.fingerprint': 'fp-marker-5d0b',
          }),
        },
      ]),
      { key },
    );
    const text = await answer.text();
    expect(JSON.parse(text).partialSuccess.rejectedLogRecords).toBe(4);
    expect(await count(evidenceMetrics.rejected, { reason: 'token_like' })).toBe(before + 4);
    expect(text).not.toContain(opaque);
    expect(text).not.toContain(jwt.split('.')[1]);
    expect(svc.lines.join('\n')).not.toContain(opaque);
  });

  it('leaves no trace of them in the database files (with a control found there)', async () => {
    await svc.db.query('CHECKPOINT');
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(join(svc.dir, 'data'));
    const holding = (needle: string) => files.filter((file) => readFileSync(file).includes(needle));
    expect(holding('fp-marker-5d0b').length).toBeGreaterThan(0);
    expect(holding(opaque)).toEqual([]);
    expect(holding(jwt.split('.')[1]!)).toEqual([]);
  });
});

describe('POST /evidence: a batch counted once', () => {
  const batch = (path: string) =>
    otlpJson([{ at, attributes: exchangeAttributes(partnerB.partnerId, { 'url.path': path }) }]);
  const stored = async (path: string) =>
    (await storedExchanges(svc.db, partnerB.partnerId)).filter((row) => row.path === path).length;

  it('stores a batch sent twice once, and answers the retry as the first time', async () => {
    const deduplicated = await count(evidenceMetrics.deduplicated);
    const first = await postEvidence(url, batch('/retried'), { key });
    const second = await postEvidence(url, batch('/retried'), { key });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(await second.json()).toEqual(await first.json());
    expect(await stored('/retried')).toBe(1);
    expect(await count(evidenceMetrics.deduplicated)).toBe(deduplicated + 1);
  });

  it('stores two different batches twice (negative control)', async () => {
    await postEvidence(url, batch('/twice'), { key });
    await postEvidence(
      url,
      otlpJson([
        { at: at + 1, attributes: exchangeAttributes(partnerB.partnerId, { 'url.path': '/twice' }) },
      ]),
      { key },
    );
    expect(await stored('/twice')).toBe(2);
  });

  it('takes the Idempotency-Key as the batch id, whatever the body', async () => {
    const headers = { 'idempotency-key': 'gateway-eu-1:batch-000042' };
    await postEvidence(url, batch('/keyed'), { key, headers });
    await postEvidence(url, batch('/keyed-other-body'), { key, headers });
    expect([await stored('/keyed'), await stored('/keyed-other-body')]).toEqual([1, 0]);
  });
});

describe('POST /evidence: bounds, before decoding', () => {
  const garbage = (bytes: number) => Buffer.alloc(bytes, 0x7b);

  it('answers 413 to a body over 4 MiB though it is not even JSON (decoding never started)', async () => {
    const answer = await postEvidence(url, garbage(4 * 1024 * 1024 + 1), { key });
    expect(answer.status).toBe(413);
    expect((await answer.json()).detail).toBe(
      `a batch of evidence is at most ${4 * 1024 * 1024} bytes: send smaller batches`,
    );
  });

  it('answers 400 to the same garbage within the bound (control: it is decoded, and refused)', async () => {
    const answer = await postEvidence(url, garbage(1024), { key });
    expect(answer.status).toBe(400);
    expect((await answer.json()).detail).toMatch(/^the body is not JSON/);
  });

  it('checks the key before the size (401 for an oversized body without a key)', async () => {
    expect((await postEvidence(url, garbage(4 * 1024 * 1024 + 1))).status).toBe(401);
  });

  it('bounds what a gzip body inflates to, and reads a small one', async () => {
    const bomb = gzipSync(Buffer.alloc(5 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const big = await postEvidence(url, bomb, { key, headers: { 'content-encoding': 'gzip' } });
    expect(big.status).toBe(413);
    const small = gzipSync(
      otlpJson([{ at, attributes: exchangeAttributes(partnerA.partnerId, { 'url.path': '/gzip' }) }]),
    );
    const answer = await postEvidence(url, small, { key, headers: { 'content-encoding': 'gzip' } });
    expect(answer.status).toBe(200);
  });

  it('answers 413 to more than 10 000 records in one batch', async () => {
    const records = Array.from({ length: 10_001 }, () => ({ at, attributes: { 'partner.id': 'p' } }));
    const answer = await postEvidence(url, otlpJson(records), { key });
    expect(answer.status).toBe(413);
    expect((await answer.json()).detail).toMatch(/more than 10000 log records/);
  });

  it('answers 415 to another content type', async () => {
    expect((await postEvidence(url, 'x', { key, type: 'text/plain' })).status).toBe(415);
  });
});

describe('POST /evidence: under pressure', () => {
  it('answers 429 with Retry-After while this instance stores as many batches as it allows, and takes the next one after', async () => {
    // One batch in flight (its body still arriving): the instance allows one at a time here.
    const body = Buffer.from(
      otlpJson([{ at, attributes: exchangeAttributes(partnerA.partnerId, { 'url.path': '/slow' }) }]),
    );
    // Written on a socket of its own: its headers and the first bytes of its body at once, the rest later.
    const target = new URL(url);
    const slow = connect(Number(target.port), target.hostname);
    let reply = '';
    const slowStatus = new Promise<number>((resolve) => {
      slow.on('data', (chunk) => {
        reply += chunk.toString();
        const status = /^HTTP\/1\.1 (\d{3})/.exec(reply);
        if (status && reply.includes('\r\n\r\n')) resolve(Number(status[1]));
      });
    });
    slow.write(
      `POST /evidence HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${key}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
    );
    slow.write(body.subarray(0, 10));
    // The first request holds its place once its key is checked: ask until the 429 shows it. Each asking
    // is a body refused after the in-flight check (400), so it opens no transaction of its own.
    let refused: Response | undefined;
    for (let attempt = 0; attempt < 500 && !refused; attempt += 1) {
      const answer = await postEvidence(url, '{', { key });
      if (answer.status === 429) refused = answer;
      else {
        expect(answer.status).toBe(400);
        await answer.arrayBuffer();
      }
    }
    expect(refused?.status).toBe(429);
    expect(refused?.headers.get('retry-after')).toBe('1');
    expect((await refused!.json()).detail).toMatch(/send this one again in 1 s/);
    slow.write(body.subarray(10));
    expect(await slowStatus).toBe(200);
    slow.destroy();
    // Control: once the slow batch is stored, the next is taken.
    const next = await postEvidence(
      url,
      otlpJson([{ at, attributes: exchangeAttributes(partnerA.partnerId, { 'url.path': '/after' }) }]),
      { key },
    );
    expect(next.status).toBe(200);
  });
});

/** The one number a `SELECT count(*)::int AS n …` gives. */
const countOf = async (sql: string, params: unknown[] = []) =>
  Number((await svc.db.query<{ n: number }>(sql, params))[0]!.n);

describe('evidence retention', () => {
  it('deletes exchanges and batch ids received before the retention, and keeps the rest', async () => {
    const total = await countOf('SELECT count(*)::int AS n FROM evidence_exchanges');
    await svc.db.query(
      "UPDATE evidence_exchanges SET received_at = now() - interval '31 days' WHERE partner_id = $1",
      [partnerB.partnerId],
    );
    await svc.db.query("UPDATE evidence_batches SET received_at = now() - interval '31 days'");
    const old = await countOf('SELECT count(*)::int AS n FROM evidence_exchanges WHERE partner_id = $1', [
      partnerB.partnerId,
    ]);
    expect(old).toBeGreaterThan(0);
    // Queued again, as if never judged: purged with their exchanges.
    await svc.db.query(
      `INSERT INTO evidence_queue (exchange_id, partner_id, at, exchange)
       SELECT id, partner_id, at, ${queuedExchange} FROM evidence_exchanges WHERE partner_id = $1
       ON CONFLICT DO NOTHING`,
      [partnerB.partnerId],
    );
    const purged = await purgeEvidence(svc.db, 30);
    expect(
      await countOf('SELECT count(*)::int AS n FROM evidence_queue WHERE partner_id = $1', [
        partnerB.partnerId,
      ]),
    ).toBe(0);
    expect(purged.exchanges).toBe(old);
    expect(purged.batches).toBeGreaterThan(0);
    const left = await countOf('SELECT count(*)::int AS n FROM evidence_exchanges');
    expect(left).toBe(total - old);
    // A longer retention (control) deletes nothing more.
    expect(await purgeEvidence(svc.db, 60)).toEqual({ exchanges: 0, batches: 0 });
  });
});
