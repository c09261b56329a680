import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, migrate, openEmbedded, openPostgres } from '../src/index.js';
import { enqueueEvent } from '../src/outbox/outbox.js';
import { addWebhook, resendDelivery } from '../src/production/webhooks/admin.js';
import { postWebhook } from '../src/production/webhooks/deliver.js';
import { createDispatcher } from '../src/production/webhooks/dispatcher.js';
import { openSecret } from '../src/production/webhooks/seal.js';
import { secretsKeyFrom } from '../src/secrets.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { type Receiver, startReceiver } from './support/receiver.js';

const key = secretsKeyFrom(generateKeyPairSync('ed25519').privateKey);
const quiet = () => {};
const fast = [0.2, 0.4, 0.8, 1, 1, 1, 1, 1, 1, 1];

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

async function until(test: () => Promise<boolean> | boolean, what: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('webhooks on the embedded store', () => {
  let dir: string;
  let db: Database;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-webhooks-'));
    db = await openEmbedded(join(dir, 'data'));
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers signed events that a Python receiver verifies, in order per partner, and a wrong secret is refused', async () => {
    const { webhookId, secret } = await addWebhook(db, key, {
      url: 'http://127.0.0.1:1/unused',
      events: ['partner.approved'],
    });
    const python = await startReceiver(secret);
    try {
      await db.query('UPDATE webhooks SET url = $2 WHERE id = $1', [webhookId, `${python.url}/hooks`]);
      // Negative control: a second endpoint on the same receiver with its own (other) secret.
      const other = await addWebhook(db, key, { url: `${python.url}/other`, events: ['partner.approved'] });
      expect(other.secret).not.toBe(secret);
      const ids: Record<string, string[]> = { ptn_a: [], ptn_b: [] };
      for (let i = 0; i < 3; i += 1)
        for (const partnerId of ['ptn_a', 'ptn_b'])
          ids[partnerId]!.push(
            (await db.transaction((tx) =>
              enqueueEvent(tx, {
                type: 'partner.approved',
                data: { partnerId, runId: `run_${i}`, scopes: ['loans:read'] },
              }),
            ))!,
          );
      const dispatcher = createDispatcher({
        db,
        secretsKey: key,
        log: quiet,
        pollMs: 100,
        schedule: [60],
      });
      try {
        await python.until(
          (lines) => python.accepted().length >= 6 && lines.filter((l) => 'rejected' in l).length >= 2,
          '6 deliveries and 2 refusals',
        );
        for (const partnerId of ['ptn_a', 'ptn_b'])
          expect(
            python
              .accepted()
              .filter((line) => line.data.partnerId === partnerId)
              .map((line) => line.id),
          ).toEqual(ids[partnerId]);
        expect(python.accepted()[0]).toMatchObject({
          type: 'partner.approved',
          data: { runId: 'run_0', scopes: ['loans:read'] },
        });
        // The wrong secret's deliveries are refused by the receiver's own check, recorded, and kept for a retry.
        const refused = await db.query<{ status: string; last_status: number; attempts: number }>(
          'SELECT status, last_status, attempts FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq',
          [other.webhookId],
        );
        expect(refused[0]).toMatchObject({ status: 'pending', last_status: 401, attempts: 1 });
        // In order per partner: the refused head of each partner holds back that partner's later events.
        expect(refused.filter((row) => row.attempts > 0)).toHaveLength(2);
        const attempts = await db.query<{ status: number }>(
          'SELECT a.status FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.webhook_id = $1',
          [webhookId],
        );
        expect(attempts.map((a) => a.status)).toEqual([204, 204, 204, 204, 204, 204]);
      } finally {
        await dispatcher.close();
      }
    } finally {
      python.stop();
    }
  });

  it('retries with backoff while the receiver refuses, with the same webhook-id, and keeps the order', async () => {
    const { webhookId, secret } = await addWebhook(db, key, {
      url: 'http://127.0.0.1:1/',
      events: ['partner.revoked', 'partner.approved'],
    });
    const python = await startReceiver(secret);
    await db.query('UPDATE webhooks SET url = $2 WHERE id = $1', [webhookId, python.url]);
    const dispatcher = createDispatcher({ db, secretsKey: key, log: quiet, pollMs: 100, schedule: fast });
    try {
      await python.refuse(true);
      const first = await db.transaction((tx) =>
        enqueueEvent(tx, { type: 'partner.approved', data: { partnerId: 'ptn_c' } }),
      );
      const second = await db.transaction((tx) =>
        enqueueEvent(tx, { type: 'partner.revoked', data: { partnerId: 'ptn_c' } }),
      );
      await python.until(
        (lines) => lines.filter((line) => 'refused' in line).length >= 3,
        'three refused attempts',
      );
      const refusedIds = python.lines.flatMap((line) => ('refused' in line ? [line.refused] : []));
      expect(new Set(refusedIds)).toEqual(new Set([first]));
      await python.refuse(false);
      await python.until(() => python.accepted().length >= 2, 'both events');
      expect(python.accepted().map((line) => [line.id, line.type])).toEqual([
        [first, 'partner.approved'],
        [second, 'partner.revoked'],
      ]);
      const [log] = await db.query<{ attempts: number; failures: number }>(
        `SELECT count(*)::int AS attempts, count(*) FILTER (WHERE a.status = 503)::int AS failures FROM webhook_attempts a
         JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1 AND d.webhook_id = $2`,
        [first, webhookId],
      );
      expect(log!.failures).toBeGreaterThanOrEqual(3);
      expect(log!.attempts).toBe(log!.failures + 1);
      // Sent again by hand: the same webhook-id once more (receivers deduplicate on it).
      const [delivery] = await db.query<{ id: string }>(
        'SELECT id FROM webhook_deliveries WHERE event_id = $1 AND webhook_id = $2',
        [first, webhookId],
      );
      expect(await resendDelivery(db, delivery!.id)).toBe(true);
      dispatcher.nudge();
      await python.until(() => python.accepted().length >= 3, 'the resent event');
      expect(python.accepted()[2]!.id).toBe(first);
    } finally {
      await dispatcher.close();
      python.stop();
    }
  });

  it('gives up after the schedule and marks the delivery failed', async () => {
    const refusing = await listen((_req, res) => res.writeHead(500).end('down'));
    try {
      const { webhookId } = await addWebhook(db, key, { url: refusing.url, events: ['run.judged'] });
      const event = await db.transaction((tx) =>
        enqueueEvent(tx, { type: 'run.judged', data: { partnerId: 'ptn_d' } }),
      );
      const dispatcher = createDispatcher({
        db,
        secretsKey: key,
        log: quiet,
        pollMs: 100,
        schedule: [0.1, 0.1],
      });
      try {
        await until(async () => {
          const [row] = await db.query<{ status: string }>(
            'SELECT status FROM webhook_deliveries WHERE event_id = $1 AND webhook_id = $2',
            [event, webhookId],
          );
          return row?.status === 'failed';
        }, 'failed');
      } finally {
        await dispatcher.close();
      }
      const attempts = await db.query(
        'SELECT a.attempt FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1',
        [event],
      );
      expect(attempts).toHaveLength(3);
    } finally {
      refusing.server.close();
    }
  });

  it('tries again at once a delivery whose claim a killed process left (the sole instance), and waits out the lease otherwise', async () => {
    const { webhookId, secret } = await addWebhook(db, key, {
      url: 'http://127.0.0.1:1/',
      events: ['partner.revoked'],
    });
    const python = await startReceiver(secret);
    try {
      await db.query('UPDATE webhooks SET url = $2 WHERE id = $1', [webhookId, python.url]);
      const event = await db.transaction((tx) =>
        enqueueEvent(tx, { type: 'partner.revoked', data: { partnerId: 'ptn_k' } }),
      );
      // What a process SIGKILLed mid-attempt leaves: the claim (a lease, one attempt counted), no record.
      await db.query(
        `UPDATE webhook_deliveries SET lease_until = now() + interval '60 seconds', attempts = 1
         WHERE event_id = $1 AND webhook_id = $2`,
        [event, webhookId],
      );
      // The control: a dispatcher that may share the store leaves the lease alone.
      const attemptsOf = async () =>
        (
          await db.query<{ status: string; attempts: number }>(
            'SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1 AND webhook_id = $2',
            [event, webhookId],
          )
        )[0];
      const shared = createDispatcher({ db, secretsKey: key, log: quiet, pollMs: 60_000 });
      try {
        await shared.tick();
      } finally {
        await shared.close();
      }
      expect(await attemptsOf()).toEqual({ status: 'pending', attempts: 1 });
      const lines: string[] = [];
      const sole = createDispatcher({
        db,
        secretsKey: key,
        log: (line) => lines.push(line),
        pollMs: 60_000,
        soleInstance: true,
      });
      try {
        await sole.tick();
      } finally {
        await sole.close();
      }
      // The attempt was made within that one tick (not by a later poll: the dispatcher is closed).
      expect(await attemptsOf()).toEqual({ status: 'delivered', attempts: 2 });
      await python.until(() => python.accepted().some((line) => line.id === event), 'the released delivery');
      expect(lines.join('\n')).toMatch(/\d+ deliver(y|ies) claimed by a process that stopped/);
    } finally {
      python.stop();
    }
  });

  it('writes nothing when the transaction that announces the event rolls back, and an event under a dedupe key once', async () => {
    await addWebhook(db, key, { url: 'http://127.0.0.1:1/', events: ['approval.expiring'] });
    const before = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events');
    await expect(
      db.transaction(async (tx) => {
        await enqueueEvent(tx, { type: 'approval.expiring', data: { partnerId: 'ptn_e' } });
        throw new Error('the decision failed');
      }),
    ).rejects.toThrow('the decision failed');
    expect(await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events')).toEqual(before);
    const once = await db.transaction((tx) =>
      enqueueEvent(tx, { type: 'approval.expiring', dedupeKey: 'expiring:x', data: { partnerId: 'ptn_e' } }),
    );
    const twice = await db.transaction((tx) =>
      enqueueEvent(tx, { type: 'approval.expiring', dedupeKey: 'expiring:x', data: { partnerId: 'ptn_e' } }),
    );
    expect(once).toMatch(/^msg_/);
    expect(twice).toBeUndefined();
  });

  it('stores the secret sealed: not in the database, opened only with the secrets key and for its webhook', async () => {
    const { webhookId, secret } = await addWebhook(db, key, {
      url: 'https://hooks.example.com/x',
      events: ['partner.approved'],
    });
    const [row] = await db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM webhooks WHERE id = $1',
      [webhookId],
    );
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(row!.secret_sealed).not.toContain(secret.slice(6, 20));
    expect(openSecret(key, webhookId, row!.secret_sealed)).toBe(secret);
    expect(() =>
      openSecret(secretsKeyFrom(generateKeyPairSync('ed25519').privateKey), webhookId, row!.secret_sealed),
    ).toThrow(/cannot be opened/);
    // Bound to its webhook: the sealed value copied to another webhook's row does not open there.
    expect(() => openSecret(key, 'whk_another', row!.secret_sealed)).toThrow(/cannot be opened/);
    await expect(
      addWebhook(db, key, { url: 'https://user:pw@hooks.example.com/', events: ['run.judged'] }),
    ).rejects.toThrow(/without credentials/);
    await expect(
      addWebhook(db, key, { url: 'ftp://hooks.example.com/', events: ['run.judged'] }),
    ).rejects.toThrow(/http\(s\) URL/);
  });
});

describe('one delivery attempt is bounded', () => {
  const limits = { connectTimeoutMs: 2_000, responseTimeoutMs: 500, maxResponseBytes: 64 };
  it('does not follow a redirect', async () => {
    let hit = 0;
    const target = await listen((_req, res) => {
      hit += 1;
      res.writeHead(204).end();
    });
    const redirecting = await listen((_req, res) => res.writeHead(307, { location: target.url }).end());
    try {
      const outcome = await postWebhook(redirecting.url, {}, '{}', limits);
      expect(outcome).toMatchObject({ ok: false, status: 307 });
      expect(outcome.error).toMatch(/redirect .* not followed/);
      expect(hit).toBe(0);
      // Control: the target itself does answer.
      expect(await postWebhook(target.url, {}, '{}', limits)).toMatchObject({ ok: true, status: 204 });
      expect(hit).toBe(1);
    } finally {
      redirecting.server.close();
      target.server.close();
    }
  });
  it('gives up on a response that does not come, and reads a body only to its cap', async () => {
    const silent = await listen(() => {});
    const chatty = await listen((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'.repeat(1024)), 5);
      res.on('close', () => clearInterval(timer));
    });
    try {
      const started = Date.now();
      const slow = await postWebhook(silent.url, {}, '{}', limits);
      expect(slow).toMatchObject({ ok: false, status: null });
      expect(slow.error).toMatch(/no complete response within 500 ms/);
      expect(Date.now() - started).toBeLessThan(10_000);
      const big = await postWebhook(chatty.url, {}, '{}', limits);
      expect(big.status).toBe(200);
      expect(big.excerpt.length).toBe(64);
      expect(big.error).toMatch(/cut at 64 bytes/);
    } finally {
      silent.server.closeAllConnections();
      silent.server.close();
      chatty.server.closeAllConnections();
      chatty.server.close();
    }
  });
});

describe('webhooks on PostgreSQL with two dispatchers', () => {
  let postgres: ThrowawayPostgres;
  let dbs: Database[] = [];
  let python: Receiver | undefined;
  beforeAll(async () => {
    postgres = await startPostgres();
    const url = await postgres.database('webhooks');
    dbs = [await openPostgres(url), await openPostgres(url)];
    await migrate(dbs[0]!);
  });
  afterAll(async () => {
    python?.stop();
    for (const db of dbs) await db.close();
    await postgres?.stop();
  });

  it('claims each delivery once (FOR UPDATE SKIP LOCKED) and keeps each partner in order', async () => {
    const [a, b] = dbs as [Database, Database];
    const { webhookId, secret } = await addWebhook(a, key, {
      url: 'http://127.0.0.1:1/',
      events: ['run.judged'],
    });
    python = await startReceiver(secret);
    await a.query('UPDATE webhooks SET url = $2 WHERE id = $1', [webhookId, python.url]);
    const expected: Record<string, string[]> = {};
    for (let i = 0; i < 10; i += 1)
      for (const partnerId of ['ptn_1', 'ptn_2', 'ptn_3', 'ptn_4']) {
        const id = await a.transaction((tx) =>
          enqueueEvent(tx, { type: 'run.judged', data: { partnerId, runId: `run_${i}` } }),
        );
        expected[partnerId] = [...(expected[partnerId] ?? []), id!];
      }
    const dispatchers = [a, b].map((db) =>
      createDispatcher({ db, secretsKey: key, log: quiet, pollMs: 20, schedule: fast }),
    );
    try {
      await python.until(() => python!.accepted().length >= 40, '40 deliveries');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(python.accepted()).toHaveLength(40);
      for (const [partnerId, ids] of Object.entries(expected))
        expect(
          python
            .accepted()
            .filter((line) => line.data.partnerId === partnerId)
            .map((line) => line.id),
        ).toEqual(ids);
      const [counts] = await a.query<{ attempts: number }>(
        'SELECT count(*)::int AS attempts FROM webhook_attempts',
      );
      expect(counts!.attempts).toBe(40);
    } finally {
      for (const dispatcher of dispatchers) await dispatcher.close();
    }
  });
});
