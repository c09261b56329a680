import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerLimiter } from '../src/http/fairness.js';
import { openDatabase } from '../src/index.js';
import { busyThreshold, threadUse } from '../src/observability/thread-use.js';
import { keyThreads, stageKeyPool } from '../src/runs/stage-keys.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { api, type CreatedRun } from './support/service.js';

// One partner's flood of creations (refused and accepted) leaves another served: refusals come first,
// with Retry-After, before any key is made. Speed under a flood is the bench's (bench/fairness.bench.mjs);
// this checks correctness only.

describe('partner limiter', () => {
  it('refuses past the rate with Retry-After, and admits again once the bucket refills', () => {
    let now = 0;
    const limiter = partnerLimiter(
      { apiConcurrency: 100, apiRequestsPerSecond: 5, createConcurrency: 1 },
      () => now,
    );
    const answers = Array.from({ length: 12 }, () => limiter.api('B'));
    const admitted = answers.filter((answer) => 'release' in answer);
    expect(admitted).toHaveLength(10); // a burst of twice the rate
    const refused = answers.find((answer) => 'refused' in answer) as { retryAfterSeconds: number };
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // Another partner is not touched by B's bucket.
    expect('release' in limiter.api('A')).toBe(true);
    now += 1000;
    expect('release' in limiter.api('B')).toBe(true);
  });

  it('counts requests in flight and frees the place on release', () => {
    const limiter = partnerLimiter({ apiConcurrency: 2, apiRequestsPerSecond: 1000, createConcurrency: 1 });
    const first = limiter.create('B');
    expect('release' in first).toBe(true);
    expect('refused' in limiter.create('B')).toBe(true);
    expect('release' in limiter.create('A')).toBe(true);
    (first as { release(): void }).release();
    expect('release' in limiter.create('B')).toBe(true);
  });
});

describe('stage key pool', () => {
  it('generates one key at a time and hands them out in order', async () => {
    let inFlight = 0;
    let most = 0;
    let made = 0;
    const pool = stageKeyPool({
      size: 2,
      generate: async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        made += 1;
        return { privateKeyPem: `key ${made}`, publicKeyPem: `pub ${made}` };
      },
    });
    expect(made).toBe(0); // nothing before the first take
    const keys = await Promise.all(Array.from({ length: 6 }, () => pool.take()));
    // One partner alone: key 2, done while only the partner that took key 1 waited, is kept ready for
    // another partner; the rest in order.
    expect(keys.map((key) => key.privateKeyPem)).toEqual([
      'key 1',
      'key 3',
      'key 4',
      'key 5',
      'key 6',
      'key 7',
    ]);
    expect(pool.ready()).toBe(1);
    expect(most).toBe(1);
    pool.close();
  });

  it('generates a second key at once only while another partner waits, and serves the partner whose last key is oldest', async () => {
    let inFlight = 0;
    let most = 0;
    let made = 0;
    const pool = stageKeyPool({
      size: 0,
      generate: async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 20));
        inFlight -= 1;
        made += 1;
        return { privateKeyPem: `key ${made}`, publicKeyPem: `pub ${made}` };
      },
    });
    // B's stream: a key taken, then a burst alone, on one lane.
    await pool.take('B');
    expect(made).toBe(1);
    const burst = Array.from({ length: 4 }, () => pool.take('B'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(inFlight).toBe(1);
    // A waits too: a second lane opens, and A (no key yet, where B has one) takes the next key done,
    // before B's burst, although B asked first (served in the order asked, B0 would be first).
    const order: string[] = [];
    for (const [index, taken] of burst.entries()) void taken.then(() => order.push(`B${index}`));
    await pool.take('A').then(() => order.push('A'));
    expect(order).toEqual(['A']);
    await Promise.all(burst);
    expect(most).toBe(2);
    // Both waiting with a burst each, they take turns: B's last key is now newer than A's, so A first.
    const both = [
      ...Array.from({ length: 3 }, (_, index) => pool.take('B').then(() => `B${index}`)),
      ...Array.from({ length: 3 }, (_, index) => pool.take('A').then(() => `A${index}`)),
    ];
    const turns: string[] = [];
    for (const taken of both) void taken.then((name) => turns.push(name));
    await Promise.all(both);
    expect(turns.map((name) => name[0]).join('')).toBe('ABABAB');
    pool.close();
  });

  it('keeps the last key ready from the partner that took the latest one, for another partner', async () => {
    let made = 0;
    const pool = stageKeyPool({
      size: 1,
      lanes: 1,
      settleMs: 0,
      generate: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        made += 1;
        return { privateKeyPem: `key ${made}`, publicKeyPem: `pub ${made}` };
      },
    });
    expect((await pool.take('B')).privateKeyPem).toBe('key 1');
    // B's stream: its next creation waits, and the key done meanwhile is kept ready, not given to B.
    const bNext = pool.take('B');
    for (let waited = 0; pool.ready() === 0 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(pool.ready()).toBe(1);
    let bServed = false;
    void bNext.then(() => {
      bServed = true;
    });
    // A finds it at once, where B still waits; B is served by the next key done.
    const a = await pool.take('A');
    expect(a.privateKeyPem).toBe('key 2');
    expect(bServed).toBe(false);
    expect((await bNext).privateKeyPem).toBe('key 3');
    // The control: a key ready beyond the last one is anyone's, B's included.
    for (let waited = 0; pool.ready() < 1 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(pool.ready()).toBe(1);
    await expect(
      Promise.race([
        pool.take('A').then(() => 'A at once'),
        new Promise((resolve) => setTimeout(resolve, 10, 'A waits')),
      ]),
    ).resolves.toBe('A at once');
    pool.close();
  });

  it('holds a key for the pool back while the HTTP thread is busy, but never a key a creation waits for', async () => {
    let busy = true;
    let looks = 0;
    let made = 0;
    const pool = stageKeyPool({
      size: 2,
      deferMs: 10,
      settleMs: 0,
      busy: () => {
        looks += 1;
        return busy;
      },
      generate: async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        made += 1;
        return { privateKeyPem: `key ${made}`, publicKeyPem: `pub ${made}` };
      },
    });
    // Busy: the first creation waits for its key, which is generated all the same.
    expect((await pool.take('A')).privateKeyPem).toBe('key 1');
    // No creation waits now: the pool's keys wait while the thread stays busy, asking again and again.
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(made).toBe(1);
    expect(pool.ready()).toBe(0);
    expect(looks).toBeGreaterThanOrEqual(2);
    // Another creation meanwhile is served at once from a key made for it.
    expect((await pool.take('B')).privateKeyPem).toBe('key 2');
    // The burst passes: the pool fills to its size.
    busy = false;
    for (let waited = 0; pool.ready() < 2 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(pool.ready()).toBe(2);
    expect(made).toBe(4);
    pool.close();
  });

  it('starts a key for the pool only once no creation has come for settleMs', async () => {
    let made = 0;
    const pool = stageKeyPool({
      size: 1,
      settleMs: 150,
      busy: () => false,
      generate: async () => {
        made += 1;
        return { privateKeyPem: `key ${made}`, publicKeyPem: `pub ${made}` };
      },
    });
    const took = performance.now();
    await pool.take('A');
    // Each creation within the hold starts it again: no key for the pool meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await pool.take('B');
    const lastTook = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(made).toBe(2);
    expect(pool.ready()).toBe(0);
    // Then the pool fills, no sooner than the hold after the last creation.
    for (let waited = 0; pool.ready() < 1 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(pool.ready()).toBe(1);
    expect(performance.now() - lastTook).toBeGreaterThanOrEqual(145);
    expect(performance.now() - took).toBeGreaterThanOrEqual(245);
    pool.close();
  });

  it('counts settleMs from when a creation that waited was served, not from when it asked', async () => {
    const started: number[] = [];
    const pool = stageKeyPool({
      size: 1,
      settleMs: 150,
      busy: () => false,
      generate: async () => {
        started.push(performance.now());
        await new Promise((resolve) => setTimeout(resolve, 100));
        return { privateKeyPem: `key ${started.length}`, publicKeyPem: `pub ${started.length}` };
      },
    });
    await pool.take('A'); // asked at once, served when its key is done, about 100 ms later
    const served = performance.now();
    for (let waited = 0; started.length < 2 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(started).toHaveLength(2);
    // The pool's key began no sooner than the hold after the creation was served (asked + 150 ms would
    // be about 50 ms after it).
    expect(started[1]! - served).toBeGreaterThanOrEqual(145);
    pool.close();
  });

  it('by default, holds a key for the pool while requests keep the thread more than a fifth used, and makes it once the thread is idle', async () => {
    let made = 0;
    const pool = stageKeyPool({
      size: 1,
      settleMs: 0,
      generate: async () => {
        made += 1;
        return { privateKeyPem: `key ${made}`, publicKeyPem: `pub ${made}` };
      },
    });
    await pool.take('A');
    // Journeys served: the thread runs callbacks about half of the time (6 ms of work, then a timer of
    // 5 ms or more): over the pool's 20% even where a loaded machine makes timers 2 or 3 times late,
    // well under the 70% the drain waits for.
    const until = performance.now() + 400;
    while (performance.now() < until) {
      const spin = performance.now() + 6;
      while (performance.now() < spin) {
        // a request's work
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(made).toBe(1);
    expect(pool.ready()).toBe(0);
    // The journeys end: the pool fills.
    for (let waited = 0; pool.ready() < 1 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(pool.ready()).toBe(1);
    pool.close();
  });

  it("measures the thread's use: a loop held busy is over the threshold, one waiting for timers is not", async () => {
    const use = threadUse();
    const until = performance.now() + 120;
    while (performance.now() < until) {
      // held busy, as a burst of requests holds the HTTP thread
    }
    expect(use()).toBeGreaterThan(busyThreshold);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(use()).toBeLessThan(busyThreshold);
  });

  it.runIf(process.platform === 'linux')(
    'generates RS256 keys on a thread of its own at a lower OS priority, stopped when idle',
    async () => {
      const niceOfThreads = () =>
        new Map(
          readdirSync('/proc/self/task').map((tid) => [
            tid,
            Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]),
          ]),
        );
      const started = async (niceIncrement: number) => {
        const before = niceOfThreads();
        const threads = keyThreads({ niceIncrement, idleMs: 100 });
        const key = await threads.generate();
        const added = [...niceOfThreads()].filter(([tid]) => !before.has(tid)).map(([, nice]) => nice);
        return { threads, key, added };
      };
      const { threads, key, added } = await started(10);
      expect(added).toContain(10);
      expect(niceOfThreads().get(String(process.pid))).toBe(0); // the HTTP thread keeps its priority
      const message = Buffer.from('a token');
      const signature = sign('sha256', message, createPrivateKey(key.privateKeyPem));
      expect(verify('sha256', message, createPublicKey(key.publicKeyPem), signature)).toBe(true);
      expect(createPrivateKey(key.privateKeyPem).asymmetricKeyDetails?.modulusLength).toBe(2048);
      expect(threads.threads()).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(threads.threads()).toBe(0);
      threads.close();
      // The control: at increment 0 the new thread runs at the process's own priority.
      const control = await started(0);
      expect(control.added).not.toContain(10);
      expect(control.added.length).toBeGreaterThan(0);
      control.threads.close();
      await expect(control.threads.generate()).rejects.toThrow(/stopping/);
    },
    60_000,
  );
});

describe('a flood of creations by one partner', () => {
  let svc: InProcessService;
  beforeAll(async () => {
    svc = await inProcessService({
      tokenDelayMs: 0,
      apiDelayMs: 0,
      limits: { maxOpenRunsPerPartner: 2, maxRunsPerHour: 10_000 },
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('refuses B with 429 and Retry-After while A is served', async () => {
    const { url } = svc.service;
    const a = await svc.partner('Partner A');
    const b = await svc.partner('Partner B');
    const flood = Promise.all(
      Array.from({ length: 40 }, () => api(url, b.apiKey, 'POST', '/api/runs', { scenarios: [] })),
    );
    const created = await api(url, a.apiKey, 'POST', '/api/runs', { scenarios: [] });
    expect(created.status).toBe(201);
    const run = created.json() as CreatedRun;
    const token = await fetch(run.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: run.clientId,
        client_secret: run.clientSecret,
      }),
    });
    expect(token.status).toBe(200);
    const answers = await flood;
    const statuses = answers.map((answer) => answer.status);
    // B got at most its cap of open runs; every other creation was refused 429, never failed.
    expect(statuses.filter((status) => status === 201).length).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((status) => status === 201).length).toBeLessThanOrEqual(2);
    expect(statuses.filter((status) => status !== 201 && status !== 429)).toEqual([]);
    for (const answer of answers.filter((item) => item.status === 429)) {
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
    }
    // The control: B's refusals are its limits, not a service refusing everyone: A still creates.
    const again = await api(url, a.apiKey, 'POST', '/api/runs', { scenarios: [] });
    expect(again.status).toBe(201);
    const [row] = await svc.db.query<{ count: string }>(
      "SELECT count(*) AS count FROM runs WHERE partner_id = (SELECT id FROM partners WHERE name = 'Partner B')",
    );
    expect(Number(row!.count)).toBe(statuses.filter((status) => status === 201).length);
  });
});

describe('the embedded store between statements', () => {
  it('serves the next turn of the event loop before any of a line of statements ends (they run on their own thread)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-turns-'));
    const heavy = 'SELECT count(*) AS n FROM generate_series(1, 200000)';
    /** Three statements asked at once and a callback of the next turn of the event loop: in what order they end. */
    const order = async (query: (text: string) => Promise<unknown>) => {
      const ends: string[] = [];
      const statements = [1, 2, 3].map((index) => query(heavy).then(() => ends.push(`statement ${index}`)));
      setImmediate(() => ends.push('the next turn'));
      await Promise.all(statements);
      await new Promise((resolve) => setImmediate(resolve));
      return ends;
    };
    try {
      const db = await openDatabase({ dataDir: join(dir, 'data') });
      try {
        expect(await order((text) => db.query(text))).toEqual([
          'the next turn',
          'statement 1',
          'statement 2',
          'statement 3',
        ]);
        expect(await order((text) => db.transaction((tx) => tx.query(text)))).toEqual([
          'the next turn',
          'statement 1',
          'statement 2',
          'statement 3',
        ]);
      } finally {
        await db.close();
      }
      // The control: PGlite on this thread runs the whole line before the thread takes anything else.
      const bare = await PGlite.create();
      try {
        expect(await order((text) => bare.query(text))).toEqual([
          'statement 1',
          'statement 2',
          'statement 3',
          'the next turn',
        ]);
      } finally {
        await bare.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
