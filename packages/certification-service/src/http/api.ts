import type { IncomingMessage, ServerResponse } from 'node:http';
import { reportContentSecurityPolicy } from '@partner-lending/conformance';
import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Database } from '../db/database.js';
import { jwksOf } from '../keys.js';
import { approvability, coverageOf } from '../production/approvability.js';
import { latestDecisionOn, listDecisions } from '../production/decisions/decisions.js';
import { iso, RunRefusal, type RunRow, type Runs } from '../runs/runs.js';
import { hashSecret } from '../secrets.js';
import { problem } from '../web/problem.js';
import { type ApiGate, type PartnerKeys, unknownKey } from './fairness.js';
import { openApiDocument } from './openapi.js';
import { finishSchema, issuesText, runRequestSchema } from './schemas.js';

/** Largest JSON body the API reads. */
export const maxApiBodyBytes = 16 * 1024;

type Env = {
  Bindings: { incoming: IncomingMessage; outgoing: ServerResponse };
  Variables: { partnerId: string };
};

const challenge = { 'www-authenticate': 'Bearer realm="partner-certification"' };

/** The partner API: runs, their reports, sessions and attestations; the JWKS; the OpenAPI document. */
export function mountApi(
  app: Hono<Env>,
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
  const { db, runs } = deps;

  app.get('/openapi.json', (c) => c.json(openApiDocument(deps.publicUrl)));
  app.get('/.well-known/jwks.json', async (c) =>
    c.json(await jwksOf(db), 200, { 'cache-control': 'public, max-age=300' }),
  );

  // The door (`apiGate`) answered the refusals it could before the routes; what reaches here is
  // admitted, or has a key not remembered yet (looked up here, then screened the same way).
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
  app.use(
    '/api/*',
    bodyLimit({
      maxSize: maxApiBodyBytes,
      onError: (c) =>
        problem(c, 413, 'Body too large', `a request body of the API is at most ${maxApiBodyBytes} bytes`),
    }),
  );

  const jsonBody = async (c: Context): Promise<unknown | Response> => {
    const text = await c.req.text();
    if (text.trim() === '') return {};
    const type = c.req.header('content-type') ?? '';
    if (!/^application\/json\b/i.test(type))
      return problem(
        c,
        415,
        'JSON expected',
        `send the body as application/json (got ${type.slice(0, 60) || 'no content type'})`,
      );
    try {
      return JSON.parse(text);
    } catch {
      return problem(c, 400, 'Invalid JSON', 'the body is not valid JSON');
    }
  };

  // Creations and finishes are also limited by `createConcurrency`, at the door.
  app.post('/api/runs', async (c) => {
    const body = await jsonBody(c);
    if (body instanceof Response) return body;
    const parsed = runRequestSchema.safeParse(body);
    if (!parsed.success)
      return problem(c, 400, 'Invalid run request', issuesText(parsed.error), {
        errors: parsed.error.issues
          .slice(0, 20)
          .map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
      });
    try {
      const run = await runs.create(c.get('partnerId'), parsed.data as Parameters<Runs['create']>[1]);
      await deps.audit(`partner:${c.get('partnerId')}`, 'run.created', run.id, {
        integration: parsed.data.integration ?? null,
      });
      return c.json(run, 201, { location: `/api/runs/${run.id}`, 'cache-control': 'no-store' });
    } catch (error) {
      if (error instanceof RunRefusal)
        return problem(
          c,
          error.status,
          error.title,
          error.message,
          {},
          error.retryAfterSeconds ? { 'retry-after': String(error.retryAfterSeconds) } : {},
        );
      throw error;
    }
  });

  app.get('/api/runs', async (c) => {
    const rows = await db.query<RunRow>(
      'SELECT id, status, created_at, finished_at, integration, verdict FROM runs WHERE partner_id = $1 ORDER BY created_at DESC LIMIT 100',
      [c.get('partnerId')],
    );
    return c.json({
      runs: rows.map((run) => ({
        id: run.id,
        status: publicStatus(run.status),
        createdAt: iso(run.created_at),
        finishedAt: iso(run.finished_at),
        integration: run.integration,
        verdict: run.verdict,
      })),
    });
  });

  /** The partner's own run, or a 404 that says nothing of anyone else's. */
  const ownRun = async (c: Context<Env>): Promise<RunRow | Response> => {
    const run = await runs.row(c.req.param('id') ?? '');
    if (!run || run.partner_id !== c.get('partnerId'))
      return problem(c, 404, 'No such run', 'no run of yours has this id');
    return run;
  };
  const judgedRun = async (c: Context<Env>): Promise<RunRow | Response> => {
    const run = await ownRun(c);
    if (run instanceof Response) return run;
    if (run.status === 'open' || run.status === 'closing')
      return problem(
        c,
        409,
        'Run not judged yet',
        'the run is still open: finish it (POST /api/runs/{id}/finish) or wait until it ends',
      );
    return run;
  };

  app.get('/api/runs/:id', async (c) => {
    const run = await ownRun(c);
    if (run instanceof Response) return run;
    return c.json(await runView(db, run), 200, { 'cache-control': 'no-store' });
  });

  app.get('/api/decisions', async (c) => {
    const production = deps.standing ? await deps.standing(c.get('partnerId')) : null;
    return c.json(
      { decisions: await listDecisions(db, c.get('partnerId')), ...(production !== null && { production }) },
      200,
      { 'cache-control': 'no-store' },
    );
  });

  app.post('/api/runs/:id/finish', async (c) => {
    const run = await ownRun(c);
    if (run instanceof Response) return run;
    const body = await jsonBody(c);
    if (body instanceof Response) return body;
    const parsed = finishSchema.safeParse(body);
    if (!parsed.success) return problem(c, 400, 'Invalid finish request', issuesText(parsed.error));
    if (run.status !== 'open')
      return problem(
        c,
        409,
        'Run already ended',
        `the run is ${publicStatus(run.status)}; its report is at /api/runs/${run.id}`,
      );
    const judged = await runs.judge(run.id, {
      how: 'finished',
      actor: `partner:${c.get('partnerId')}`,
      ...(parsed.data.journeyExitCode !== undefined && { journeyExitCode: parsed.data.journeyExitCode }),
    });
    if (!judged) return problem(c, 409, 'Run already ended', 'the run was finished or ended meanwhile');
    return c.json(await runView(db, (await runs.row(run.id))!), 200, { 'cache-control': 'no-store' });
  });

  app.get('/api/runs/:id/report.html', async (c) => {
    const run = await judgedRun(c);
    if (run instanceof Response) return run;
    const [row] = await db.query<{ report_html: string }>('SELECT report_html FROM runs WHERE id = $1', [
      run.id,
    ]);
    return reportResponse(row!.report_html);
  });
  app.get('/api/runs/:id/session', async (c) => {
    const run = await judgedRun(c);
    if (run instanceof Response) return run;
    const [row] = await db.query<{ session_text: string }>('SELECT session_text FROM runs WHERE id = $1', [
      run.id,
    ]);
    return new Response(row!.session_text, {
      headers: {
        'content-type': 'application/json',
        'content-disposition': `attachment; filename="${run.id}.session.json"`,
        'x-content-type-options': 'nosniff',
      },
    });
  });
  app.get('/api/runs/:id/attestation', async (c) => {
    const run = await judgedRun(c);
    if (run instanceof Response) return run;
    const [row] = await db.query<{ attestation: string }>('SELECT attestation FROM runs WHERE id = $1', [
      run.id,
    ]);
    return new Response(row!.attestation, {
      headers: { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' },
    });
  });
}

/**
 * A run as the API shows it to its partner: its state, the partner and plan, what it covered, whether a
 * reviewer may approve it (and if not, why), the latest decision on it, and its report once judged.
 */
export async function runView(db: Database, run: RunRow) {
  const [partner] = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM partners WHERE id = $1',
    [run.partner_id],
  );
  const report = run.report_json ? JSON.parse(run.report_json) : null;
  const decision = await latestDecisionOn(db, run.id);
  const { approvable, notApprovable } = approvability({
    status: publicStatus(run.status),
    certify: run.certify,
    verdict: run.verdict,
    attestation: typeof run.attestation === 'string',
    plan: run.plan,
    report,
  });
  return {
    id: run.id,
    kind: run.certify ? 'certification' : 'practice',
    status: publicStatus(run.status),
    createdAt: iso(run.created_at),
    expiresAt: iso(run.expires_at),
    finishedAt: iso(run.finished_at),
    partner: partner ? { id: partner.id, name: partner.name } : null,
    integration: run.integration,
    plan: run.plan ? { id: run.plan.id, digest: run.plan.digest } : null,
    verdict: run.verdict,
    coverage: report ? coverageOf(report) : null,
    approvable,
    notApprovable,
    decision: decision
      ? {
          id: decision.id,
          decision: decision.decision,
          at: decision.at,
          note: decision.note,
          validUntil: decision.validUntil,
        }
      : null,
    report,
  };
}

/** `closing` is an instant of judging: outside, the run is still open until it is judged. */
export const publicStatus = (status: RunRow['status']) => (status === 'closing' ? 'open' : status);

/** A stored HTML report, under the report's own CSP (the one its meta tag holds) and no framing. */
export function reportResponse(html: string): Response {
  return new Response(html, {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `${reportContentSecurityPolicy}; frame-ancestors 'none'`,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    },
  });
}

/** Appends a line to the audit log. */
export type Audit = (
  actor: string,
  action: string,
  subject: string | null,
  detail: Record<string, unknown>,
) => Promise<void>;
