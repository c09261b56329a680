import type { Server } from 'node:http';
import type { Context, Hono } from 'hono';
import type { Database } from '../../db/database.js';
import { problem } from '../../web/problem.js';
import { statementResponse } from '../pages.js';
import { ChangeRefusal, type RegisterChanges } from './changes.js';
import { type Register, registerReaderOf } from './register.js';

const challenge = 'Bearer realm="partner-register"';

/**
 * The register, for the production side: `GET /register` (every partner with a standing) and
 * `GET /register/partners/{partnerId}` (one), each a compact JWS (`application/jwt`) for a register
 * reader's key, with `ETag` (a matching `If-None-Match` gets 304) and `Cache-Control: max-age`.
 */
export function mountRegister(
  // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
  app: Hono<any>,
  deps: { db: Database; register: Register; changes: RegisterChanges },
) {
  app.use('/register', reader(deps.db));
  app.use('/register/*', reader(deps.db));
  const serve = async (c: Context, partnerId?: string) => {
    const document = await deps.register.document(partnerId);
    // An absence is as cacheable as an entry: a production side asks again after the same max-age.
    if (!document)
      return problem(
        c,
        404,
        'Not in the register',
        'this partner has no approval, revocation or expiry on record: it is not approved for production',
        {},
        { 'cache-control': `max-age=${deps.register.maxAgeSeconds}`, vary: 'authorization' },
      );
    const headers = {
      etag: document.etag,
      'cache-control': `max-age=${deps.register.maxAgeOf(document)}`,
      vary: 'authorization',
    };
    const match = c.req.header('if-none-match');
    if (match?.split(',').some((tag) => tag.trim() === document.etag))
      return new Response(null, { status: 304, headers });
    return new Response(document.jws, {
      status: 200,
      headers: { ...headers, 'content-type': 'application/jwt' },
    });
  };
  // A decision's signed statement, for the partner it is about (the API's key check runs first).
  app.get('/api/decisions/:id/statement', async (c) => {
    const [row] = await deps.db.query<{ envelope: string }>(
      `SELECT s.envelope FROM decision_statements s JOIN decisions d ON d.id::text = s.decision_id
       WHERE s.decision_id = $1 AND d.partner_id = $2`,
      [c.req.param('id'), c.get('partnerId')],
    );
    if (!row) return problem(c, 404, 'No such decision', 'no signed decision about you has this id');
    return statementResponse(row.envelope, c.req.param('id') ?? 'decision');
  });
  app.get('/register/changes', (c) => changes(c, deps.changes));
  app.get('/register', (c) => serve(c));
  app.get('/register/partners/:partnerId', (c) => serve(c, c.req.param('partnerId')));
}

function reader(db: Database) {
  return async (c: Context, next: () => Promise<void>) => {
    const match = /^bearer +(\S+)$/i.exec(c.req.header('authorization') ?? '');
    if (!match)
      return problem(
        c,
        401,
        'Register key required',
        'send a register reader key as "Authorization: Bearer <key>" (the operator makes one with "partner-certification-service admin add-register-reader")',
        {},
        { 'www-authenticate': challenge },
      );
    const found = await registerReaderOf(db, match[1]!);
    if (!found)
      return problem(
        c,
        401,
        'Unknown register key',
        'this key is not a register reader key of this service (or it was removed)',
        {},
        { 'www-authenticate': `${challenge}, error="invalid_token"` },
      );
    c.set('registerReader', found.id);
    await next();
  };
}

/**
 * `GET /register/changes?after=<seq>`: held until the whole register's seq is above `after` (at once
 * without `after`), or for the hold (`changed: false`); 429 / 503 with Retry-After when too many wait.
 */
async function changes(c: Context, notice: RegisterChanges) {
  const after = c.req.query('after');
  if (after !== undefined && !/^\d{1,15}$/.test(after))
    return problem(c, 400, 'Bad after', 'after must be the seq of the register copy you hold (an integer)');
  const headers = { 'cache-control': 'no-store', vary: 'authorization' };
  try {
    const env = c.env as { incoming?: { socket?: { server?: Server } } } | undefined;
    const answer = await notice.wait(
      c.get('registerReader') as string,
      after === undefined ? undefined : Number(after),
      {
        signal: c.req.raw.signal,
        ...(env?.incoming?.socket?.server && { server: env.incoming.socket.server }),
      },
    );
    return c.json(answer, 200, headers);
  } catch (error) {
    if (!(error instanceof ChangeRefusal)) throw error;
    return problem(
      c,
      error.status,
      error.status === 429 ? 'Too many change polls' : 'Change polls full',
      error.message,
      {},
      {
        ...headers,
        'retry-after': String(error.retryAfterSeconds),
      },
    );
  }
}
