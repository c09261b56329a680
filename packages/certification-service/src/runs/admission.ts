import type { Queryable } from '../db/database.js';
import { RunRefusal } from './types.js';

export { RunRefusal };

/**
 * Refuses a creation the partner's limits forbid (open runs at once, runs per hour), with reads only:
 * it runs before any costly work (a stage key, the transaction that takes the partner's lock), so a
 * refused creation costs one statement (two indexed reads). Creation checks again under the lock, where it counts.
 */
export async function refuseOverLimits(
  db: Queryable,
  partnerId: string,
  limits: { maxOpenRunsPerPartner: number; maxRunsPerHour: number },
): Promise<void> {
  // One statement for both counts: on the embedded store every statement holds the one thread.
  const [counts] = await db.query<{ open: string; recent: string; oldest: Date | string | null }>(
    `SELECT (SELECT count(*) FROM runs WHERE partner_id = $1 AND status IN ('open', 'closing')) AS open,
            recent.count AS recent, recent.oldest AS oldest
     FROM (SELECT count(*) AS count, min(at) AS oldest FROM rate_events
           WHERE partner_id = $1 AND at > now() - interval '1 hour') AS recent`,
    [partnerId],
  );
  const open = { count: counts!.open };
  const recent = { count: counts!.recent, oldest: counts!.oldest };
  if (Number(open.count) >= limits.maxOpenRunsPerPartner)
    throw new RunRefusal(
      429,
      'Too many open runs',
      `this partner already has ${open.count} open runs (at most ${limits.maxOpenRunsPerPartner}): finish one (POST /api/runs/{id}/finish) before creating another`,
      60,
    );
  if (Number(recent.count) >= limits.maxRunsPerHour) {
    const wait = Math.max(1, Math.ceil((new Date(recent.oldest!).getTime() + 3_600_000 - Date.now()) / 1000));
    throw new RunRefusal(
      429,
      'Too many runs created',
      `this partner created ${recent.count} runs in the last hour (at most ${limits.maxRunsPerHour}); try again in ${wait} s`,
      wait,
    );
  }
}
