import type { IncomingMessage } from 'node:http';
import type { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Database } from '../db/database.js';
import { jwksOf } from '../keys.js';
import { listDecisions } from '../production/decisions/decisions.js';
import type { Runs } from '../runs/runs.js';
import { hashSecret } from '../secrets.js';
import { problem } from '../web/problem.js';
import type { ApiEnv, Audit } from './api-context.js';
import { type ApiGate, type PartnerKeys, unknownKey } from './fairness.js';
import { openApiDocument } from './openapi.js';
import { mountRunFiles, mountRunRoutes } from './runs-api.js';

export type { Audit } from './api-context.js';
export { reportResponse } from './run-view.js';

/** Largest JSON body the API reads. */
export const maxApiBodyBytes = 16 * 1024;

const challenge = { 'www-authenticate': 'Bearer realm="partner-certification"' };

/** The partner API: runs, their reports, sessions and attestations; the JWKS; the OpenAPI document. */
export function mountApi(
  app: Hono<ApiEnv>,
  deps: {
    db: Database;
    runs: Runs;
    publicUrl: string;
    audit: Audit;
    /** Which partner a key is (remembered a few seconds) and the door that admits its requests. */
    keys: PartnerKeys;
    gate: ApiGate;
    /** The partner's production standing for GET /api/decisions (status, scopes, validUntil, expiring); null when never approved. */
    standing?: (partnerId: string) => Promise<unknown>;
  },
) {
  const { db } = deps;

  app.get('/openapi.json', (c) => c.json(openApiDocument(deps.publicUrl)));
  app.get('/.well-known/jwks.json', async (c) =>
    c.json(await jwksOf(db), 200, { 'cache-control': 'public, max-age=300' }),
  );

  mountDoor(app, deps);
  app.use(
    '/api/*',
    bodyLimit({
      maxSize: maxApiBodyBytes,
      onError: (c) =>
        problem(c, 413, 'Body too large', `a request body of the API is at most ${maxApiBodyBytes} bytes`),
    }),
  );

  mountRunRoutes(app, deps);
  app.get('/api/decisions', async (c) => {
    const production = deps.standing ? await deps.standing(c.get('partnerId')) : null;
    return c.json(
      { decisions: await listDecisions(db, c.get('partnerId')), ...(production !== null && { production }) },
      200,
      { 'cache-control': 'no-store' },
    );
  });
  mountRunFiles(app, deps);
}

/**
 * The door of /api/*: the partner a request is. `apiGate` answered the refusals it could before the
 * routes; what reaches here is admitted, or has a key not remembered yet (looked up here, then
 * screened the same way).
 */
function mountDoor(app: Hono<ApiEnv>, deps: { keys: PartnerKeys; gate: ApiGate }) {
  app.use('/api/*', async (c, next) => {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    const admitted = deps.gate.admittedAs(incoming);
    if (admitted !== undefined) {
      c.set('partnerId', admitted);
      return next();
    }
    const match = deps.gate.bearer.exec(c.req.header('authorization') ?? '');
    if (!match)
      return problem(
        c,
        401,
        'API key required',
        'send the API key the vendor gave you as "Authorization: Bearer <key>"',
        {},
        challenge,
      );
    const partnerId = await deps.keys.resolve(hashSecret(match[1]!));
    const refusal =
      partnerId === undefined
        ? unknownKey()
        : incoming && c.env.outgoing
          ? deps.gate.admit(partnerId, incoming, c.env.outgoing, c.req.method, c.req.path)
          : undefined;
    if (partnerId !== undefined) c.set('partnerId', partnerId);
    if (refusal) return problem(c, refusal.status, refusal.title, refusal.detail, {}, refusal.headers);
    return next();
  });
}
