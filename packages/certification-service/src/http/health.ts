import type { Hono } from 'hono';
import type { Database } from '../db/database.js';
import { migrations } from '../db/migrations.js';
import { unavailableRetrySeconds } from '../errors.js';
import type { SigningKey } from '../keys.js';
import type { LogLine } from '../observability/logger.js';
import type { WarmUpState } from './warmup.js';

/** What `/readyz` checked, each `ok` or what is wrong (never a driver's message or an address). */
export interface Readiness {
  database: 'ok' | 'unreachable';
  migrations: 'ok' | 'behind' | 'unknown';
  signingKey: 'ok' | 'not published' | 'unknown';
  /** `stopping` from the moment the instance was told to stop (SIGTERM), while it finishes what it serves. */
  accepting: 'ok' | 'stopping';
  /**
   * The start-up warm-up (see `startWarmUp`): `warming up` (not ready yet), `ok` (done), `off`
   * (`--no-warm-up`), `failed` or `overran` (its deadline passed): ready in all but the first.
   */
  warmUp: WarmUpState;
}

/**
 * `/healthz`: the process is alive and answers (no database involved, so that an orchestrator does not
 * restart an instance for its database's outage). `/readyz`: the instance can serve — its database
 * answers, every migration this version knows is applied, its attestation key is loaded and published
 * — has finished its start-up warm-up (or given up on it: see `startWarmUp`) and is not stopping, 200;
 * else 503 with `Retry-After` and which check failed. From a stop (SIGTERM)
 * on, `/readyz` answers 503 while the instance still serves (see `shutdownDelayMs`), so that a load
 * balancer takes it out of its pool first.
 */
export function mountHealth(
  app: Hono,
  deps: {
    db: Database;
    signingKey: SigningKey;
    log: LogLine;
    stopping: () => boolean;
    warmUp: () => WarmUpState;
  },
) {
  app.get('/healthz', (c) => c.json({ status: 'ok' }, 200, { 'cache-control': 'no-store' }));
  app.get('/readyz', async (c) => {
    const checks: Readiness = {
      database: 'ok',
      migrations: 'unknown',
      signingKey: 'unknown',
      accepting: deps.stopping() ? 'stopping' : 'ok',
      warmUp: deps.warmUp(),
    };
    try {
      const applied = new Set(
        (await deps.db.query<{ id: number }>('SELECT id FROM schema_migrations')).map((row) =>
          Number(row.id),
        ),
      );
      checks.migrations = migrations.every((migration) => applied.has(migration.id)) ? 'ok' : 'behind';
      const [key] = await deps.db.query('SELECT kid FROM signing_keys WHERE kid = $1', [deps.signingKey.kid]);
      checks.signingKey = key ? 'ok' : 'not published';
    } catch (error) {
      deps.log(`readiness: the database did not answer: ${(error as Error).message}`);
      checks.database = 'unreachable';
    }
    const ready =
      checks.database === 'ok' &&
      checks.migrations === 'ok' &&
      checks.signingKey === 'ok' &&
      checks.accepting === 'ok' &&
      checks.warmUp !== 'warming up';
    return c.json({ status: ready ? 'ready' : 'unavailable', checks }, ready ? 200 : 503, {
      'cache-control': 'no-store',
      ...(!ready && { 'retry-after': String(unavailableRetrySeconds) }),
    });
  });
}
