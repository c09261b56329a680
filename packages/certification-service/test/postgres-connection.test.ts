import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, migrate, openPostgres } from '../src/index.js';
import { sharedStatements } from '../src/recording/statements.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// How the service talks to PostgreSQL. The statements every call makes are prepared once per connection
// (`prepare`), so that the server neither parses nor plans their text again. Statements run one after
// another here, so each pool holds one connection, and `pg_prepared_statements` (which lists a
// session's own) is read on it.
let postgres: ThrowawayPostgres;
let db: Database;
beforeAll(async () => {
  postgres = await startPostgres();
  db = await openPostgres(await postgres.database(`prepared_${Date.now()}`));
  await migrate(db);
}, 120_000);
afterAll(async () => {
  await db?.close();
  await postgres?.stop();
});

const prepared = async (query: Database['query'] = db.query) =>
  query<{ name: string; statement: string }>(
    'SELECT name, statement FROM pg_prepared_statements ORDER BY prepare_time',
  );

describe('prepared statements on PostgreSQL', () => {
  it('prepares a statement once, under a name of its text, and answers as the same text sent alone', async () => {
    await db.query('CREATE TABLE prep_a (id text PRIMARY KEY, n int NOT NULL)');
    await db.query("INSERT INTO prep_a VALUES ('a', 1), ('b', 2), ('c', 3)");
    const text = 'SELECT id, n FROM prep_a WHERE id = ANY($1) ORDER BY id';
    const plain = await db.query(text, [['a', 'c']]);
    // Sent without `prepare`, nothing is kept on the connection.
    expect((await prepared()).filter((row) => row.statement === text)).toEqual([]);
    const first = await db.query(text, [['a', 'c']], { prepare: true });
    const again = await db.query(text, [['b']], { prepare: true });
    expect(first).toEqual(plain);
    expect(first).toEqual([
      { id: 'a', n: 1 },
      { id: 'c', n: 3 },
    ]);
    expect(again).toEqual([{ id: 'b', n: 2 }]);
    const rows = (await prepared()).filter((row) => row.statement === text);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.name).toMatch(/^s[0-9a-f]{24}$/);
  });

  it('keeps answering once a migration adds a column to a table its statement writes', async () => {
    await db.query('CREATE TABLE prep_b (id text PRIMARY KEY, n int NOT NULL)');
    await db.query("INSERT INTO prep_b VALUES ('a', 1)");
    const text = 'UPDATE prep_b SET n = n + $2 WHERE id = $1 RETURNING id, n';
    expect(await db.query(text, ['a', 1], { prepare: true })).toEqual([{ id: 'a', n: 2 }]);
    await db.query("ALTER TABLE prep_b ADD COLUMN note text NOT NULL DEFAULT ''");
    expect(await db.query(text, ['a', 1], { prepare: true })).toEqual([{ id: 'a', n: 3 }]);
  });

  it('sends statements as text past 32 prepared texts, so that a varying text grows nothing', async () => {
    const before = (await prepared()).length;
    for (let index = 0; index < 40; index++)
      expect(await db.query(`SELECT ${index}::int AS n`, [], { prepare: true })).toEqual([{ n: index }]);
    const after = await prepared();
    expect(after.length).toBeLessThanOrEqual(32);
    expect(after.length - before).toBe(32 - before);
    expect(after.some((row) => row.statement === 'SELECT 39::int AS n')).toBe(false);
  });

  it('prepares the grouped statements every call makes (number, issue, play, record and revoke)', async () => {
    const hot = await openPostgres(await postgres.database(`prepared_hot_${Date.now()}`));
    try {
      await migrate(hot);
      const statements = sharedStatements(hot);
      // No such run: each statement runs, and changes nothing.
      expect(await statements.number('run_none')).toBeUndefined();
      expect(
        await statements.issue({ runId: 'run_none', sha256: 'a'.repeat(64), token: '{}' }),
      ).toBeUndefined();
      expect(
        await statements.play({
          runId: 'run_none',
          before: '{}',
          after: '{"s":1}',
          number: null,
          token: null,
        }),
      ).toBe(false);
      expect(await statements.record({ runId: 'run_none', seq: 1, exchange: '{}' })).toBe(false);
      await statements.revoke({ runId: 'run_none', number: 1, token: '{}' });
      const unflushed = (await prepared(hot.queryUnflushed)).map((row) => row.statement);
      const main = (await prepared(hot.query)).map((row) => row.statement);
      expect(unflushed).toHaveLength(3);
      expect(unflushed.join('\n')).toMatch(/UPDATE runs r SET seq = r\.seq/);
      expect(unflushed.join('\n')).toMatch(/INSERT INTO run_tokens/);
      expect(unflushed.join('\n')).toMatch(/UPDATE run_scenarios s SET state = w\.after/);
      expect(main).toHaveLength(2);
      expect(main.join('\n')).toMatch(/INSERT INTO exchanges/);
      expect(main.join('\n')).toMatch(/UPDATE run_tokens t SET token = w\.token/);
    } finally {
      await hot.close();
    }
  });
});

// A PostgreSQL on the same machine is reached through its Unix socket (pg's `host` parameter, the
// socket's directory).
describe('PostgreSQL through its Unix socket', () => {
  it('serves through the socket, and says where with the socket directory rather than localhost', async () => {
    const name = `socket_${Date.now()}`;
    await postgres.database(name);
    const url = postgres.socketUrl(name);
    const dir = decodeURIComponent(new URL(url).searchParams.get('host')!);
    expect(dir).toMatch(/^\//);
    // As `serve` opens it: with the serving lock, taken on a connection of its own through the socket too.
    const db = await openPostgres(url, { serving: true });
    try {
      expect(db.where).toBe(`${dir}:${new URL(url).port}/${name}`);
      await migrate(db);
      // Not through TCP: the server sees no client address on a Unix socket.
      expect(await db.query('SELECT inet_client_addr() AS addr')).toEqual([{ addr: null }]);
      expect(await db.query('SELECT count(*)::int AS n FROM runs', [], { prepare: true })).toEqual([
        { n: 0 },
      ]);
    } finally {
      await db.close();
    }
    // A socket directory holding a control character is named with `?` in its place, in the message too.
    const refused = await openPostgres(
      `postgres://postgres@localhost:1/${name}?host=${encodeURIComponent('/nonexistent\u001b[2J\n')}`,
    ).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(refused).toContain('cannot reach PostgreSQL at /nonexistent?[2J?:1/');
    expect([...refused!].filter((char) => char.charCodeAt(0) < 0x20)).toEqual([]);
    // The same database over TCP, for contrast: a client address, and the host in `where`.
    const tcp = await openPostgres(await postgres.database(`${name}_tcp`));
    try {
      expect(tcp.where).toMatch(/^127\.0\.0\.1:\d+\//);
      expect(await tcp.query('SELECT host(inet_client_addr()) AS addr')).toEqual([{ addr: '127.0.0.1' }]);
    } finally {
      await tcp.close();
    }
  });
});
