import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { ServiceError, StorageUnavailableError } from '../errors.js';

/** A row as the drivers give it. */
// biome-ignore lint/suspicious/noExplicitAny: rows are typed by the caller of each query
export type Row = Record<string, any>;

/** What the service asks of its database: SQL with `$1` parameters, and transactions. */
export interface Queryable {
  query<T extends object = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface Database extends Queryable {
  /** `embedded` (PGlite in a directory) or `postgres` (a server, by DATABASE_URL). */
  readonly kind: 'embedded' | 'postgres';
  /** Where it is, with no password: the directory, or the URL's host, port and database. */
  readonly where: string;
  /**
   * The journal of answered calls, which one process writes and the next replays: the embedded store's
   * is a directory beside its database files; PostgreSQL has one only when opened with `journalDir`
   * (one instance serves it). None where instances share the database.
   */
  readonly journalDir?: string;
  /**
   * This process alone serves the database's runs (numbers their calls and plays their scenarios in
   * memory): the embedded store (its directory is locked), or PostgreSQL opened with `journalDir` (its
   * serving lock held exclusively).
   */
  readonly exclusive: boolean;
  /** Runs `work` in one transaction (committed when it resolves, rolled back when it throws). */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * A statement whose commit need not wait for the disk: its effect is visible at once, and is made
   * durable by the next commit that does wait (PostgreSQL writes its log in order), or may be lost
   * with nothing else lost (a call's number, when the call was never recorded). PostgreSQL runs it
   * with `synchronous_commit = off`; PGlite as any statement.
   */
  queryUnflushed<T extends object = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/** Opens PGlite in `dataDir` (created when missing). The directory belongs to one process at a time. */
export async function openEmbedded(dataDir: string): Promise<Database> {
  const { mkdirSync, openSync, closeSync, writeSync, readFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // PGlite does not lock its directory itself: two processes on one directory would corrupt it. A lock
  // file with the owner's pid keeps a second one out, and a stale lock (its process gone) is taken over.
  const lock = join(dataDir, 'service.lock');
  for (let attempt = 0; ; attempt += 1) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw inUse(dataDir, lock);
      const owner = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner))
        throw inUse(dataDir, lock, owner);
      rmSync(lock, { force: true });
    }
  }
  let db: EmbeddedThread;
  try {
    const pgdata = join(dataDir, 'pgdata');
    // A fresh directory is initialised by a second WebAssembly instance (initdb) that PGlite keeps as
    // long as the database is open (about 360 MiB of the process's memory): initialised by a process
    // that then ends, the service holds only the database's own.
    if (!existsSync(join(pgdata, 'PG_VERSION'))) await initialiseApart(pgdata);
    db = await openEmbeddedThread(pgdata, dataDir);
  } catch (error) {
    rmSync(lock, { force: true });
    throw new ServiceError(
      'ERR_STORAGE',
      `cannot open the embedded database in ${dataDir}: ${(error as Error).message}. Is it a directory this user can write, made by this service?`,
    );
  }
  // The parameters are copied to the thread with the message (structured clone).
  const run = <T extends object = Row>(text: string, params?: readonly unknown[]) =>
    db.send<T>('query', { text, params });
  return {
    kind: 'embedded',
    where: dataDir,
    journalDir: join(dataDir, 'journal'),
    exclusive: true,
    query: run,
    queryUnflushed: run,
    async transaction(work) {
      const tx = await db.begin();
      let result: Awaited<ReturnType<typeof work>>;
      try {
        result = await work({ query: (text, params) => db.send('query', { text, params, tx }) });
      } catch (error) {
        await db.send('end', { tx, commit: false }).catch(() => {});
        throw error;
      }
      await db.send('end', { tx, commit: true });
      return result;
    },
    close: async () => {
      await db.close();
      rmSync(lock, { force: true });
    },
  };
}

/** PGlite on its worker thread (embedded-thread.mjs): statements sent as messages, rows read back. */
export interface EmbeddedThread {
  send<T extends object = Row>(op: 'query' | 'end' | 'close', fields: object): Promise<T[]>;
  /** Begins a transaction: its id, for its statements (`tx`) and its end. */
  begin(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The worker thread's file: beside this module in the sources, `db/embedded-thread.js` beside the
 * build's chunks.
 */
function embeddedThreadFile(): URL {
  const candidates = [
    new URL('./db/embedded-thread.js', import.meta.url),
    new URL('./embedded-thread.mjs', import.meta.url),
  ];
  return candidates.find((candidate) => existsSync(candidate)) ?? candidates[1]!;
}

/**
 * Opens PGlite on a worker thread, so that no statement holds the thread that serves HTTP. A thread
 * that ends (WebAssembly out of memory, a crash) fails every statement waiting and every later one
 * with StorageUnavailableError: answered 503, and /readyz says so, until the service is restarted.
 * `file` is the thread's module (the tests give one that fails).
 */
export async function openEmbeddedThread(
  pgdata: string,
  dataDir: string,
  file: URL = embeddedThreadFile(),
): Promise<EmbeddedThread> {
  const worker = new Worker(file, { workerData: { pgdata } });
  const waiting = new Map<number, { resolve: (rows: Row[]) => void; reject: (error: Error) => void }>();
  let next = 0;
  let transactions = 0;
  let ended: Error | undefined;
  let closing = false;
  const end = (error: Error) => {
    ended ??= error;
    for (const { reject } of waiting.values()) reject(ended);
    waiting.clear();
  };
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: { ready?: true; failed?: string }) => {
      worker.off('error', onError);
      if (message.ready) resolve();
      else reject(new Error(message.failed ?? 'the database thread did not start'));
    };
    const onError = (error: Error) => {
      worker.off('message', onMessage);
      reject(error);
    };
    worker.once('message', onMessage);
    worker.once('error', onError);
  }).catch(async (error: unknown) => {
    await worker.terminate();
    throw error;
  });
  worker.on('message', (message: { id: number; rows?: Row[]; error?: Record<string, unknown> }) => {
    const entry = waiting.get(message.id);
    if (!entry) return;
    waiting.delete(message.id);
    if (message.error) entry.reject(Object.assign(new Error(String(message.error.message)), message.error));
    else entry.resolve(message.rows ?? []);
  });
  worker.on('error', (error) => end(new StorageUnavailableError(dataDir, error)));
  worker.on('exit', (code) => {
    if (!closing)
      end(new StorageUnavailableError(dataDir, new Error(`the database thread exited with code ${code}`)));
  });
  // The thread keeps the process alive only while a statement waits for it (as a socket would), so
  // that a program that is done exits without having to close the database first.
  worker.unref();
  const settle = () => {
    if (waiting.size === 0) worker.unref();
  };
  const send = <T extends object = Row>(op: string, fields: object): Promise<T[]> => {
    if (ended) return Promise.reject(ended);
    next += 1;
    const id = next;
    if (waiting.size === 0) worker.ref();
    return new Promise<T[]>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (rows: Row[]) => void, reject });
      worker.postMessage({ id, op, ...fields });
    }).finally(settle);
  };
  return {
    send,
    begin: () => {
      transactions += 1;
      const tx = transactions;
      return send('begin', { tx }).then(() => tx);
    },
    async close() {
      if (ended) return void (await worker.terminate());
      closing = true;
      await send('close', {});
      end(new Error('the embedded database is closed'));
      await worker.terminate();
    },
  };
}

/**
 * Creates the database in `pgdata` in a short-lived Node process, so that the memory initdb used goes
 * back to the system with the process (a worker thread's would stay in this process's allocator).
 */
async function initialiseApart(pgdata: string): Promise<void> {
  const { spawn } = await import('node:child_process');
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '--eval',
      `const { PGlite } = await import(process.env.PGLITE_URL);
       await (await PGlite.create(process.env.PGLITE_DATA)).close();`,
    ],
    {
      env: { ...process.env, PGLITE_URL: import.meta.resolve('@electric-sql/pglite'), PGLITE_DATA: pgdata },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 4000) stderr += chunk;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0)
    throw new Error(`initdb exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function inUse(dataDir: string, lock: string, owner?: number): ServiceError {
  return new ServiceError(
    'ERR_STORAGE_IN_USE',
    `the embedded database in ${dataDir} is in use${owner ? ` by process ${owner}` : ''} (${lock}): it belongs to one process at a time. Stop the service before running admin commands, or use PostgreSQL (DATABASE_URL) to run both at once.`,
  );
}

export interface PostgresOptions {
  /** Connections of the main pool (default 10). */
  max?: number;
  /**
   * One instance serves this database, and answers a call once it is written to a journal file in this
   * directory (filled into the database in the background, replayed at start-up after a crash), as the
   * embedded store does: its calls do not wait for PostgreSQL. The serving lock is taken exclusively:
   * opening fails (`ERR_STORAGE_IN_USE`) while another instance serves the database, and any other
   * serving instance is refused while this one does. The directory must outlive the process (a
   * persistent volume): what it holds when the process dies is in no database yet. Default: none.
   */
  journalDir?: string;
  /**
   * Serving among instances that share the database: the serving lock is taken shared, so that an
   * instance with a `journalDir` cannot start beside this one, nor this one beside it. Default false
   * (admin commands and tools take no lock).
   */
  serving?: boolean;
}

/**
 * The serving lock (a session-level advisory lock, its two keys): held shared by each instance that
 * shares the database, exclusively by one with a journal file.
 */
const servingLock = [0x70637376, 1] as const;

/**
 * Holds the serving lock on a connection of its own for as long as the database is open. When that
 * connection is lost (the server restarted, the network broke), the lock went with it: `held()` is false
 * until it is taken again, tried every second (the database's statements are refused meanwhile).
 */
async function holdServingLock(
  url: string,
  where: string,
  exclusive: boolean,
): Promise<{ held: () => boolean; close: () => Promise<void> }> {
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  const take = async (): Promise<string | undefined> => {
    const candidate = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
    });
    const lost = () => {
      if (client !== candidate) return;
      client = undefined;
      candidate.end().catch(() => {});
      again();
    };
    candidate.on('error', lost);
    candidate.on('end', lost);
    await candidate.connect();
    try {
      const [row] = (
        await candidate.query<{ taken: boolean; alone: boolean | null }>(
          `SELECT ${exclusive ? 'pg_try_advisory_lock' : 'pg_try_advisory_lock_shared'}($1, $2) AS taken,
             (SELECT bool_or(mode = 'ExclusiveLock') FROM pg_locks
              WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND granted AND pid <> pg_backend_pid()
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS alone`,
          [...servingLock],
        )
      ).rows;
      if (row?.taken) {
        if (closed) await candidate.end().catch(() => {});
        else client = candidate;
        return undefined;
      }
      await candidate.end().catch(() => {});
      return row?.alone ? 'one instance with a journal directory' : 'other instances';
    } catch (error) {
      await candidate.end().catch(() => {});
      throw error;
    }
  };
  const again = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      take().then(
        (refused) => refused && again(),
        () => again(),
      );
    }, 1000);
    retry.unref();
  };
  const refused = await take();
  if (refused)
    throw new ServiceError(
      'ERR_STORAGE_IN_USE',
      exclusive
        ? `PostgreSQL at ${where} is served by ${refused}: an instance with a journal directory must be the only one. Stop the others first, or start this one without a journal directory, as they are.`
        : `PostgreSQL at ${where} is served by ${refused}, which must be the only one. Stop it first, or give this instance the same journal directory in its place.`,
    );
  return {
    held: () => client !== undefined,
    close: async () => {
      closed = true;
      clearTimeout(retry);
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}

/** Connects to PostgreSQL by URL (`postgres://user:password@host:port/database`). */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Database> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ServiceError(
      'ERR_CONFIG',
      'DATABASE_URL is not a URL: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://).',
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new ServiceError(
      'ERR_CONFIG',
      `DATABASE_URL has the scheme ${parsed.protocol.slice(0, 20)}, expected postgres:// or postgresql://.`,
    );
  const where = `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname}`;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: 10_000,
  });
  // Connections for statements that need not wait for the disk (see queryUnflushed): the runs' grouped
  // numbering and scenario writes, one statement in flight each, so that neither waits behind the
  // records, token issues and reads of the main pool (nor those behind them).
  const unflushed = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: 10_000,
    options: '-c synchronous_commit=off',
  });
  // An idle connection the server dropped is replaced; its error must not crash the process.
  pool.on('error', () => {});
  unflushed.on('error', () => {});
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => {});
    await unflushed.end().catch(() => {});
    throw new ServiceError(
      'ERR_STORAGE',
      `cannot reach PostgreSQL at ${where}: ${(error as Error).message}. Check DATABASE_URL and that the server accepts connections.`,
    );
  }
  const exclusive = options.journalDir !== undefined;
  let lock: Awaited<ReturnType<typeof holdServingLock>> | undefined;
  if (exclusive || options.serving)
    try {
      lock = await holdServingLock(url, where, exclusive);
    } catch (error) {
      await Promise.all([pool.end().catch(() => {}), unflushed.end().catch(() => {})]);
      if (error instanceof ServiceError) throw error;
      throw new ServiceError(
        'ERR_STORAGE',
        `cannot take the serving lock of PostgreSQL at ${where}: ${(error as Error).message}.`,
      );
    }
  const lockLost = new Error('the connection holding its serving lock was lost; taking the lock again');
  /**
   * A connection-level failure becomes a StorageUnavailableError; a statement's own error stays as it
   * is. Without its serving lock, nothing is sent: another instance may be serving meanwhile.
   */
  const guard = <T>(work: () => Promise<T>): Promise<T> =>
    lock && !lock.held()
      ? Promise.reject(new StorageUnavailableError(where, lockLost))
      : work().catch((error: unknown) => {
          throw unreachable(error) ? new StorageUnavailableError(where, error) : error;
        });
  return {
    kind: 'postgres',
    where,
    ...(options.journalDir !== undefined && { journalDir: options.journalDir }),
    exclusive,
    query: (text, params) =>
      guard(async () => (await pool.query(text, params ? [...params] : undefined)).rows),
    queryUnflushed: (text, params) =>
      guard(async () => (await unflushed.query(text, params ? [...params] : undefined)).rows),
    async transaction(work) {
      const client = await guard(() => pool.connect());
      let broken: unknown;
      try {
        await guard(() => client.query('BEGIN'));
        const result = await work({
          query: (text, params) =>
            guard(async () => (await client.query(text, params ? [...params] : undefined)).rows),
        });
        await guard(() => client.query('COMMIT'));
        return result;
      } catch (error) {
        if (error instanceof StorageUnavailableError) broken = error;
        else await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        // A connection that failed is destroyed, not handed to the next caller.
        client.release(broken instanceof Error ? broken : undefined);
      }
    },
    close: async () => {
      await Promise.all([pool.end(), unflushed.end()]);
      await lock?.close();
    },
  };
}

/**
 * Whether an error of the driver means the database is out of reach rather than that a statement
 * failed: a network error (ECONNREFUSED, ECONNRESET, ETIMEDOUT…), SQLSTATE class 08 (connection
 * exception), 57P (the server shutting down or starting), 53 (out of resources, e.g. too many
 * connections), or the driver's own words for a dropped or timed-out connection.
 */
export function unreachable(error: unknown): boolean {
  const code = String((error as { code?: unknown })?.code ?? '');
  if (/^E[A-Z]+$/.test(code)) return true;
  if (/^(08|57P|53)/.test(code)) return true;
  if (code !== '') return false;
  return /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed|not queryable|Connection closed/i.test(
    (error as Error)?.message ?? '',
  );
}

/** The database the options name: PostgreSQL when `databaseUrl` is set, else PGlite in `dataDir`. */
export function openDatabase(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** PostgreSQL only: see `PostgresOptions.journalDir` and `serving`. */
  journalDir?: string | undefined;
  serving?: boolean;
}): Promise<Database> {
  if (!options.databaseUrl) return openEmbedded(options.dataDir);
  return openPostgres(options.databaseUrl, {
    ...(options.journalDir !== undefined && { journalDir: options.journalDir }),
    ...(options.serving && { serving: true }),
  });
}
