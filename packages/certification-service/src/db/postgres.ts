import { createHash } from 'node:crypto';
import pg from 'pg';
import { printable, ServiceError, StorageUnavailableError } from '../errors.js';
import { holdServingLock } from './serving-lock.js';
import type { Database, QueryOptions } from './types.js';

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
 * Where a PostgreSQL URL points, with no password (host:port/database, the host being a Unix socket's
 * directory when the URL's `host` parameter gives one); a URL of another kind is refused.
 */
function whereOf(url: string): string {
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
  // A `host` parameter names the server itself (pg's): a Unix socket's directory, or a host name. It is
  // percent-decoded, so its control characters are shown as `?` (the messages reach a terminal).
  const socket = parsed.searchParams.get('host');
  const host = (socket && printable(socket)) || parsed.hostname || 'localhost';
  return `${host}:${parsed.port || '5432'}${parsed.pathname}`;
}

/** Distinct statements prepared by name (see `QueryOptions.prepare`); others are sent as text. */
const maxPrepared = 32;

/**
 * What the driver is sent for a statement: the text alone, or (`prepare`) the text under a name derived
 * from it, which the driver prepares once per connection and then only binds. The names are kept by
 * text: a few statements, each hashed once; past `maxPrepared` texts (a caller asking it of statements
 * that vary), a text is sent as any statement, so that neither this map nor the connections' statements
 * grow.
 */
function queryConfigs() {
  const names = new Map<string, string>();
  return (
    text: string,
    params: readonly unknown[] | undefined,
    options: QueryOptions | undefined,
  ): pg.QueryConfig => {
    const values = params ? [...params] : [];
    if (!options?.prepare) return { text, values };
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= maxPrepared) return { text, values };
      name = `s${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return { name, text, values };
  };
}

/** Connects to PostgreSQL by URL (`postgres://user:password@host:port/database`). */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Database> {
  const where = whereOf(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: 10_000,
  });
  // Connections for statements that need not wait for the disk (see queryUnflushed): the runs' grouped
  // numbering, one statement in flight, and scenario writes and token issues (three at most each, as
  // records: `recordsInFlight`), so that none waits behind the records and reads of the main pool (nor
  // those behind them).
  const unflushed = new pg.Pool({
    connectionString: url,
    max: 7,
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
      `cannot reach PostgreSQL at ${where}: ${printable((error as Error).message)}. Check DATABASE_URL and that the server accepts connections.`,
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
        `cannot take the serving lock of PostgreSQL at ${where}: ${printable((error as Error).message)}.`,
      );
    }
  const config = queryConfigs();
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
    query: (text, params, options) =>
      guard(async () => (await pool.query(config(text, params, options))).rows),
    queryUnflushed: (text, params, options) =>
      guard(async () => (await unflushed.query(config(text, params, options))).rows),
    async transaction(work) {
      const client = await guard(() => pool.connect());
      let broken: unknown;
      try {
        await guard(() => client.query('BEGIN'));
        const result = await work({
          query: (text, params, options) =>
            guard(async () => (await client.query(config(text, params, options))).rows),
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
