import type { Hono } from 'hono';
import type { Database } from '../db/database.js';
import { problem } from '../web/problem.js';
import { listRegressions, regressionEnvelope, regressionStatementResponse } from './list.js';

/**
 * The partner API's regressions (behind the API's key check, which covers `/api/*` and sets the
 * partner): a partner reads its own regressions with their evidence, and their signed statements —
 * never another partner's.
 */
export function mountRegressionApi(
  app: Hono<{ Variables: { partnerId: string } }>,
  deps: { db: Database },
): void {
  app.get('/api/production/regressions', async (c) =>
    c.json({ regressions: await listRegressions(deps.db, c.get('partnerId')) }, 200, {
      'cache-control': 'no-store',
    }),
  );
  app.get('/api/production/regressions/:id/statement', async (c) => {
    const id = c.req.param('id');
    const envelope = await regressionEnvelope(deps.db, id, c.get('partnerId'));
    if (envelope === undefined)
      return problem(
        c,
        404,
        'Not found',
        'no regression of yours has this id (GET /api/production/regressions lists them)',
      );
    return regressionStatementResponse(envelope, id);
  });
}
