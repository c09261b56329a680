import { Hono } from 'hono';
import { StorageUnavailableError } from '../errors.js';
import { JudgingUnavailableError } from '../judging/pool.js';
import type { LogLine } from '../observability/logger.js';
import { notePartner } from '../observability/requests.js';
import { problem, unavailable } from '../web/problem.js';
import { allowedMethods, methodNotAllowed } from './allow.js';
import { openApiDocument } from './openapi.js';
import { hostileText } from './schemas.js';

// The service's one Hono app, around what the API, the UI and the production wing mount on it: the
// addresses refused before any route, the headers every answer carries, and what no route answers.

/** The app, with its first middlewares: hostile addresses refused, the headers of every answer. */
export function serviceApp() {
  // biome-ignore lint/suspicious/noExplicitAny: both mounts add their own variables to one app
  const app = new Hono<any>();
  // An address with a control character, an unpaired surrogate or bad percent-encoding names nothing
  // here: answered 404 before any route reads it (a NUL would otherwise reach the database).
  app.use('*', async (c, next) => {
    const raw = c.req.url.slice(c.req.url.indexOf('/', 8)).split('?')[0]!;
    let path: string;
    try {
      path = decodeURIComponent(raw);
    } catch {
      path = '\u0000';
    }
    if (hostileText.test(path))
      return problem(c, 404, 'Not found', 'no address here holds control characters or invalid encoding');
    return next();
  });
  app.use('*', async (c, next) => {
    await next();
    notePartner(c.env?.incoming, c.get('partnerId'));
    c.res.headers.set('x-content-type-options', 'nosniff');
    if (!c.res.headers.has('content-security-policy'))
      c.res.headers.set('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  });
  return app;
}

/**
 * What no route answers, once every route is mounted: 405 with Allow on a path of the OpenAPI
 * document asked with another method, else 404; an error as 503 (database, judging), 400 (a value the
 * database cannot hold) or 500, the error in the log.
 */
export function answerUnrouted(
  // biome-ignore lint/suspicious/noExplicitAny: the app every part mounts on (see serviceApp)
  app: Hono<any>,
  deps: { publicUrl: string; log: LogLine },
) {
  const { log } = deps;
  const allowedAt = allowedMethods(openApiDocument(deps.publicUrl).paths);
  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    const allowed = allowedAt(path);
    if (allowed && !allowed.includes(c.req.method)) return methodNotAllowed(c, allowed);
    return problem(c, 404, 'Not found', `nothing at ${c.req.method} ${path.slice(0, 200)}`);
  });
  app.onError((error, c) => {
    log(`error on ${c.req.method} ${new URL(c.req.url).pathname.slice(0, 200)}: ${error.message}`);
    if (error instanceof StorageUnavailableError) return unavailable(c);
    if (error instanceof JudgingUnavailableError)
      return problem(
        c,
        503,
        'Judging unavailable',
        `the run could not be judged just now (the reason is in the service's log); it is still open: finish it again in ${error.retryAfterSeconds} s`,
        {},
        { 'retry-after': String(error.retryAfterSeconds) },
      );
    // SQLSTATE class 22 (data exception): a value of the request the database cannot hold.
    if (/^22/.test(String((error as { code?: unknown }).code ?? '')))
      return problem(
        c,
        400,
        'Invalid characters',
        'the request holds text the service cannot store (a NUL or an invalid character): remove it and send again',
      );
    return problem(c, 500, 'Internal error', 'the service failed to answer; the error is in its log');
  });
}
