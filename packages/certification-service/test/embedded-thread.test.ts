import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbeddedThread } from '../src/db/database.js';
import { StorageUnavailableError } from '../src/errors.js';
import { type Database, openEmbedded } from '../src/index.js';

// A statement that keeps PGlite busy for a few hundred milliseconds.
const slow = 'SELECT sum(i)::text AS total FROM generate_series(1, 3000000) AS i';

/** The longest gap between ticks of a 5-ms timer on this thread while `work` runs, and how long it ran. */
async function stallDuring(work: () => Promise<unknown>): Promise<{ maxGapMs: number; tookMs: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const tookMs = performance.now() - started;
  maxGapMs = Math.max(maxGapMs, performance.now() - last);
  return { maxGapMs, tookMs };
}

describe('the embedded store on a thread of its own', () => {
  let dir: string;
  let db: Database;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-embedded-thread-'));
    db = await openEmbedded(join(dir, 'data'));
    await db.query('CREATE TABLE items (id int PRIMARY KEY, body jsonb, at timestamptz)');
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a long statement without holding this thread; PGlite on this thread holds it (control)', async () => {
    const threaded = await stallDuring(() => db.query(slow));
    // Control: the same statement on PGlite in this thread stops the timer for its whole length.
    const inThread = await PGlite.create();
    let control: { maxGapMs: number; tookMs: number };
    try {
      control = await stallDuring(() => inThread.query(slow));
    } finally {
      await inThread.close();
    }
    expect(control.tookMs).toBeGreaterThan(150);
    expect(control.maxGapMs).toBeGreaterThan(control.tookMs * 0.8);
    expect(threaded.tookMs).toBeGreaterThan(150);
    expect(threaded.maxGapMs).toBeLessThan(threaded.tookMs / 2);
  });

  it("holds 64 MB of shared buffers (WebAssembly memory that never shrinks), not PostgreSQL's 128 MB", async () => {
    expect(await db.query('SHOW shared_buffers')).toEqual([{ shared_buffers: '64MB' }]);
    // Control: PGlite at its defaults.
    const bare = await PGlite.create();
    try {
      expect((await bare.query('SHOW shared_buffers')).rows).toEqual([{ shared_buffers: '128MB' }]);
    } finally {
      await bare.close();
    }
  });

  it('gives rows with their types, and a statement error with its SQLSTATE', async () => {
    const at = new Date('2026-11-26T10:00:00.123Z');
    await db.query('INSERT INTO items VALUES ($1, $2, $3)', [1, JSON.stringify({ a: [1, 'b'] }), at]);
    const rows = await db.query<{ id: number; body: unknown; at: Date }>('SELECT * FROM items WHERE id = 1');
    expect(rows).toEqual([{ id: 1, body: { a: [1, 'b'] }, at }]);
    expect(rows[0]!.at).toBeInstanceOf(Date);
    const duplicate = await db.query('INSERT INTO items VALUES (1, null, null)').catch((error) => error);
    expect(duplicate).toBeInstanceOf(Error);
    expect(duplicate).toMatchObject({ code: '23505', constraint: 'items_pkey' });
    expect(duplicate.message).toMatch(/duplicate key/);
  });

  it('commits a transaction whole, rolls it back when its work throws, and keeps other statements out of it', async () => {
    let outside: Promise<Array<{ n: number }>> | undefined;
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO items VALUES (10, null, null)');
      // A statement outside waits for the transaction's end: it sees both rows or neither.
      outside = db.query<{ n: number }>('SELECT count(*)::int AS n FROM items WHERE id IN (10, 11)');
      await new Promise((resolve) => setTimeout(resolve, 50));
      await tx.query('INSERT INTO items VALUES (11, null, null)');
    });
    expect(await outside).toEqual([{ n: 2 }]);

    const failed = await db
      .transaction(async (tx) => {
        await tx.query('INSERT INTO items VALUES (20, null, null)');
        throw new Error('the work failed');
      })
      .catch((error) => error);
    expect(failed.message).toBe('the work failed');
    // Rolled back: 20 is not there, and the store takes statements again.
    expect(await db.query('SELECT id FROM items WHERE id = 20')).toEqual([]);
    // A statement error inside rolls back too, and its SQLSTATE reaches the caller.
    const conflict = await db
      .transaction(async (tx) => {
        await tx.query('INSERT INTO items VALUES (21, null, null)');
        await tx.query('INSERT INTO items VALUES (1, null, null)');
      })
      .catch((error) => error);
    expect(conflict).toMatchObject({ code: '23505' });
    expect(await db.query('SELECT id FROM items WHERE id = 21')).toEqual([]);
  });

  it('fails the statement waiting and every later one as unavailable when the thread ends', async () => {
    // A thread that opens, then ends at its first statement (as WebAssembly out of memory would).
    const file = join(dir, 'dies.mjs');
    writeFileSync(
      file,
      `import { parentPort } from 'node:worker_threads';
       parentPort.postMessage({ ready: true });
       parentPort.on('message', () => process.exit(7));`,
    );
    const thread = await openEmbeddedThread(join(dir, 'unused'), 'the test directory', pathToFileURL(file));
    const waiting = await thread.send('query', { text: 'SELECT 1' }).catch((error) => error);
    expect(waiting).toBeInstanceOf(StorageUnavailableError);
    expect(waiting.message).toMatch(/exited with code 7/);
    const later = await thread.send('query', { text: 'SELECT 1' }).catch((error) => error);
    expect(later).toBeInstanceOf(StorageUnavailableError);
    await thread.close();
    // Control: the real thread answers the same statement.
    expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('lets a program that is done exit without closing the store, after its statement is answered', async () => {
    // The build (tests run after it), as the command-line tool uses it.
    const script = join(dir, 'forgets-to-close.mjs');
    writeFileSync(
      script,
      `import { openEmbedded } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, '../dist/index.js')).href)};
       const db = await openEmbedded(${JSON.stringify(join(dir, 'other'))});
       console.log(JSON.stringify(await db.query('SELECT 41 + 1 AS answer')));`,
    );
    const started = Date.now();
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual([{ answer: 42 }]);
    expect(Date.now() - started).toBeLessThan(60_000);
  });
});
