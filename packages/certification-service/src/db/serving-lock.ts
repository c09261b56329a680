import pg from 'pg';
import { ServiceError } from '../errors.js';

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
export async function holdServingLock(
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
