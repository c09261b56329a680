import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerKeys } from '../src/http/fairness.js';
import { type Database, openDatabase, type Queryable } from '../src/index.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { api } from './support/service.js';

// The API's door: a partner's refused requests are answered before any body, route or database work
// (the key remembered), a wave of requests with a new key reads it once, and a key removed from the
// database stops working within `apiKeyCacheSeconds`.

/** The database, with every statement it is sent written down in `statements`. */
function counted(db: Database): { db: Database; statements: string[] } {
  const statements: string[] = [];
  const wrap = (inner: Queryable): Queryable => ({
    query: (text, params) => {
      statements.push(text);
      return inner.query(text, params);
    },
  });
  return {
    statements,
    db: {
      kind: db.kind,
      where: db.where,
      exclusive: db.exclusive,
      ...wrap(db),
      queryUnflushed: (text, params) => {
        statements.push(text);
        return db.queryUnflushed(text, params);
      },
      transaction: (work) => db.transaction((tx) => work(wrap(tx))),
      close: () => db.close(),
    },
  };
}

describe('partner keys', () => {
  it('reads a key once for a wave, remembers it for the TTL, and unknown keys apart', async () => {
    let at = 0;
    const reads: string[] = [];
    const keys = partnerKeys(
      async (keyHash) => {
        reads.push(keyHash);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return keyHash === 'good' ? 'ptn_1' : undefined;
      },
      { ttlMs: 1000, max: 2, now: () => at },
    );
    expect(keys.cached('good')).toBeUndefined();
    const wave = await Promise.all(Array.from({ length: 100 }, () => keys.resolve('good')));
    expect(new Set(wave)).toEqual(new Set(['ptn_1']));
    expect(reads).toEqual(['good']);
    expect(keys.cached('good')).toBe('ptn_1');
    expect(await keys.resolve('bad')).toBeUndefined();
    expect(keys.cached('bad')).toBeNull();
    // Made-up keys fill their own map: the known key stays remembered.
    for (const made of ['x1', 'x2', 'x3']) await keys.resolve(made);
    expect(keys.cached('good')).toBe('ptn_1');
    expect(keys.cached('x1')).toBeUndefined(); // the oldest unknown one was forgotten (max 2)
    at = 999;
    expect(keys.cached('good')).toBe('ptn_1');
    at = 1000;
    expect(keys.cached('good')).toBeUndefined();
    expect(await keys.resolve('good')).toBe('ptn_1');
    expect(reads.filter((read) => read === 'good')).toHaveLength(2);
  });

  it('with a TTL of 0 reads every time (the control)', async () => {
    let count = 0;
    const keys = partnerKeys(
      async () => {
        count += 1;
        return 'ptn_1';
      },
      { ttlMs: 0 },
    );
    await keys.resolve('good');
    await keys.resolve('good');
    expect(count).toBe(2);
    expect(keys.cached('good')).toBeUndefined();
  });

  it('reads a key in use in the second half of its time again, so that it is never forgotten while used', async () => {
    let at = 0;
    let partner: string | undefined = 'ptn_1';
    const reads: number[] = [];
    const keys = partnerKeys(
      async () => {
        reads.push(at);
        return partner;
      },
      { ttlMs: 1000, now: () => at },
    );
    await keys.resolve('good');
    at = 400;
    expect(keys.cached('good')).toBe('ptn_1'); // first half: no read
    expect(reads).toEqual([0]);
    at = 600;
    expect(keys.cached('good')).toBe('ptn_1'); // second half: answered, and read again behind
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toEqual([0, 600]);
    // The key removed: still remembered until 1600 (the read at 600), and the read behind it finds no
    // partner, so the door refuses it from then on.
    partner = undefined;
    at = 1500;
    expect(keys.cached('good')).toBe('ptn_1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toEqual([0, 600, 1500]);
    expect(keys.cached('good')).toBeNull();
    // The control: a key not used in the second half of its time is forgotten when it ends.
    const idle = partnerKeys(async () => 'ptn_2', { ttlMs: 1000, now: () => at });
    await idle.resolve('other');
    at += 1000;
    expect(idle.cached('other')).toBeUndefined();
  });
});

describe('the door of the API', () => {
  let svc: InProcessService;
  let statements: string[];
  /**
   * Statements since `from` other than API key reads and the background workers' own (the webhook
   * outbox and the evidence watch poll on timers of their own, whatever the requests).
   */
  const requestStatements = (from: number) =>
    statements
      .slice(from)
      .filter(
        (text) =>
          !text.includes('api_key_hash') && !/webhook_deliveries|evidence_cursors|evidence_queue/.test(text),
      );
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-gate-'));
    const wrapped = counted(await openDatabase({ dataDir: join(dir, 'data') }));
    statements = wrapped.statements;
    svc = await inProcessService({
      db: wrapped.db,
      tokenDelayMs: 0,
      apiDelayMs: 0,
      sweepIntervalMs: 3_600_000,
      // One request every 2 s, in bursts of 1: the second request at once is refused; refusals answered
      // at once (the hold has a test of its own below), so that the times here are the cache's.
      fairness: { apiRequestsPerSecond: 0.5, apiKeyCacheSeconds: 1, refusalHoldMs: 0 },
    });
  });
  afterAll(async () => {
    await svc?.close();
    await svc?.db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a flood of creations with no database statement, as the routes would answer', async () => {
    const { url } = svc.service;
    const b = await svc.partner('Partner B');
    expect((await api(url, b.apiKey, 'GET', '/api/runs')).status).toBe(200);
    const before = statements.length;
    const started = performance.now();
    const flood = await Promise.all(
      Array.from({ length: 50 }, () => api(url, b.apiKey, 'POST', '/api/runs', { scenarios: [] })),
    );
    const floodMs = performance.now() - started;
    expect(flood.map((answer) => answer.status)).toEqual(Array(50).fill(429));
    // No statement for the requests: only the key read again behind, once per half of
    // apiKeyCacheSeconds (1 s) the flood lasted (it lasts about 100 ms; more on a busy machine).
    expect(requestStatements(before)).toEqual([]);
    const keyReads = statements.slice(before).filter((text) => text.includes('api_key_hash'));
    expect(keyReads.length).toBeLessThanOrEqual(1 + Math.floor(floodMs / 500));
    expect(keyReads.length).toBeLessThan(flood.length);
    const answer = flood[0]!;
    expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(answer.headers.get('x-request-id')).toBeTruthy();
    expect(answer.json()).toMatchObject({ status: 429, title: 'Too many requests' });
    expect(answer.json().detail).toMatch(/more than 0.5 requests per second/);
    // The control: B is served again once its bucket refilled (the refusals were its share, not an
    // API refusing everyone), and A, another partner, is served during B's flood.
    const a = await svc.partner('Partner A');
    expect((await api(url, a.apiKey, 'GET', '/api/runs')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const served = statements.length;
    expect((await api(url, b.apiKey, 'GET', '/api/runs')).status).toBe(200);
    // The filter above hides no request's statements: a request served has some.
    expect(requestStatements(served).length).toBeGreaterThan(0);
  });

  it('reads a new key once for a wave of its requests', async () => {
    const { url } = svc.service;
    const c = await svc.partner('Partner C');
    const before = statements.length;
    const wave = await Promise.all(Array.from({ length: 30 }, () => api(url, c.apiKey, 'GET', '/api/runs')));
    expect(wave.filter((answer) => answer.status === 200)).toHaveLength(1);
    expect(wave.filter((answer) => answer.status !== 200).map((answer) => answer.status)).toEqual(
      Array(29).fill(429),
    );
    expect(statements.slice(before).filter((text) => text.includes('api_key_hash'))).toHaveLength(1);
  });

  it('refuses a key removed from the database within apiKeyCacheSeconds', async () => {
    const { url } = svc.service;
    const d = await svc.partner('Partner D');
    expect((await api(url, d.apiKey, 'GET', '/api/runs')).status).toBe(200);
    // The operator replaces the key in the database (as a rotation would).
    await svc.db.query("UPDATE partners SET api_key_hash = 'replaced' WHERE id = $1", [d.partnerId]);
    const removedAt = Date.now();
    // Remembered: still known at once (429: its one request of the burst is spent; the cache is what
    // is under test)...
    const soon = await api(url, d.apiKey, 'GET', '/api/runs');
    if (Date.now() - removedAt < 900) expect(soon.status).toBe(429);
    // ...and refused once a second has passed, without a restart.
    await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() - removedAt)));
    const late = await api(url, d.apiKey, 'GET', '/api/runs');
    expect(late.status).toBe(401);
    expect(late.json().title).toBe('Unknown API key');
    // Unknown keys are remembered too, and answered 401 at the door with no statement.
    const before = statements.length;
    expect((await api(url, d.apiKey, 'POST', '/api/runs', { scenarios: [] })).status).toBe(401);
    expect(statements.slice(before).filter((text) => !text.includes('api_key_hash'))).toEqual([]);
    expect(statements.slice(before).length).toBeLessThanOrEqual(1);
  });
});

describe('refusals held at the door', () => {
  let svc: InProcessService;
  beforeAll(async () => {
    svc = await inProcessService({
      tokenDelayMs: 0,
      apiDelayMs: 0,
      sweepIntervalMs: 3_600_000,
      // One request every 2 s, in bursts of 1; refusals held 1.5 s, 10 at most.
      fairness: { apiRequestsPerSecond: 0.5, refusalHoldMs: 1500, maxHeldRefusals: 10 },
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('holds a refusal before answering it, at most maxHeldRefusals at once, and harms no other partner', async () => {
    const { url } = svc.service;
    const b = await svc.partner('Partner B');
    const a = await svc.partner('Partner A');
    expect((await api(url, b.apiKey, 'GET', '/api/runs')).status).toBe(200); // B's key remembered, its burst spent
    const started = performance.now();
    const timed = async (key: string, method: string, path: string, body?: unknown) => {
      const sent = performance.now();
      const answer = await api(url, key, method, path, body);
      return { ...answer, ms: performance.now() - sent, end: performance.now() - started };
    };
    const flood = Promise.all(Array.from({ length: 30 }, () => timed(b.apiKey, 'POST', '/api/runs', {})));
    // A, another partner, is answered during B's held refusals, not after them.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const served = await timed(a.apiKey, 'GET', '/api/runs');
    expect(served.status).toBe(200);
    const answers = await flood;
    expect(answers.map((answer) => answer.status)).toEqual(Array(30).fill(429));
    // 10 held (answered no sooner than the hold), the 20 past the cap answered at once: the control
    // that the wait is the hold's, not a slow service.
    const slow = answers.filter((answer) => answer.ms >= 1400);
    expect(slow).toHaveLength(10);
    expect(served.end).toBeLessThan(Math.min(...slow.map((answer) => answer.end)));
    // A held refusal closes its connection (the client's next request is a new connection, accepted in
    // turn); one answered at once keeps it.
    expect(slow.map((answer) => answer.headers.get('connection'))).toEqual(Array(10).fill('close'));
    expect(
      answers.filter((answer) => answer.ms < 1400).map((answer) => answer.headers.get('connection')),
    ).not.toContain('close');
    for (const answer of answers) {
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    }
    // Retry-After counts from the answer and is honest: B waits what a held answer says, and is served.
    const held = slow[slow.length - 1]!;
    await new Promise((resolve) => setTimeout(resolve, Number(held.headers.get('retry-after')) * 1000 + 100));
    expect((await api(url, b.apiKey, 'GET', '/api/runs')).status).toBe(200);
  }, 60_000);
});
