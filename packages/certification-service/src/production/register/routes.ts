import type { Context, Hono } from 'hono';
import type { Database } from '../../db/database.js';
import { problem } from '../../web/problem.js';
import { statementResponse } from '../pages.js';
import { type Register, registerReaderOf } from './register.js';

const challenge = 'Bearer realm="partner-register"';

/**
 * The register, for the production side: `GET /register` (every partner with a standing) and
 * `GET /register/partners/{partnerId}` (one), each a compact JWS (`application/jwt`) for a register
 * reader's key, with `ETag` (a matching `If-None-Match` gets 304) and `Cache-Control: max-age`.
 */
// biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
export function mountRegister(app: Hono<any>, deps: { db: Database; register: Register }) {
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
    if (!(await registerReaderOf(db, match[1]!)))
      return problem(
        c,
        401,
        'Unknown register key',
        'this key is not a register reader key of this service (or it was removed)',
        {},
        { 'www-authenticate': `${challenge}, error="invalid_token"` },
      );
    await next();
  };
}
