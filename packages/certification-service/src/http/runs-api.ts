import type { CreatedRun, FinishedRun } from '@partner-lending/conformance';
import type { Context, Hono } from 'hono';
import type { Database } from '../db/database.js';
import { iso, RunRefusal, type RunRow, type Runs } from '../runs/runs.js';
import { problem } from '../web/problem.js';
import { type ApiEnv, type Audit, jsonBody } from './api-context.js';
import { publicStatus, reportResponse, runView } from './run-view.js';
import { finishSchema, issuesText, runRequestSchema } from './schemas.js';

// The partner API's runs: create, list, read and finish them; once judged, their report, session and
// attestation. Every route is behind the door `mountApi` puts before them (the partner is known).

interface RunRoutesDeps {
  db: Database;
  runs: Runs;
  audit: Audit;
}

/** POST and GET /api/runs, GET /api/runs/{id}, POST /api/runs/{id}/finish. */
export function mountRunRoutes(app: Hono<ApiEnv>, deps: RunRoutesDeps) {
  const { db, runs } = deps;

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
      // The answer is conformance's `CreatedRun`, the type its hosted client command reads.
      const run: CreatedRun = await runs.create(
        c.get('partnerId'),
        parsed.data as Parameters<Runs['create']>[1],
      );
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

  app.get('/api/runs/:id', async (c) => {
    const run = await ownRun(c, runs);
    if (run instanceof Response) return run;
    return c.json(await runView(db, run), 200, { 'cache-control': 'no-store' });
  });

  app.post('/api/runs/:id/finish', async (c) => {
    const run = await ownRun(c, runs);
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
    // The answer is read by conformance's hosted client command as its `FinishedRun`.
    const finished = (await runView(db, (await runs.row(run.id))!)) satisfies FinishedRun;
    return c.json(finished, 200, { 'cache-control': 'no-store' });
  });
}

/** GET /api/runs/{id}/report.html, /session and /attestation: what a judged run left. */
export function mountRunFiles(app: Hono<ApiEnv>, deps: Pick<RunRoutesDeps, 'db' | 'runs'>) {
  const { db, runs } = deps;
  app.get('/api/runs/:id/report.html', async (c) => {
    const run = await judgedRun(c, runs);
    if (run instanceof Response) return run;
    const [row] = await db.query<{ report_html: string }>('SELECT report_html FROM runs WHERE id = $1', [
      run.id,
    ]);
    return reportResponse(row!.report_html);
  });
  app.get('/api/runs/:id/session', async (c) => {
    const run = await judgedRun(c, runs);
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
    const run = await judgedRun(c, runs);
    if (run instanceof Response) return run;
    const [row] = await db.query<{ attestation: string }>('SELECT attestation FROM runs WHERE id = $1', [
      run.id,
    ]);
    return new Response(row!.attestation, {
      headers: { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' },
    });
  });
}

/** The partner's own run, or a 404 that says nothing of anyone else's. */
async function ownRun(c: Context<ApiEnv>, runs: Runs): Promise<RunRow | Response> {
  const run = await runs.row(c.req.param('id') ?? '');
  if (!run || run.partner_id !== c.get('partnerId'))
    return problem(c, 404, 'No such run', 'no run of yours has this id');
  return run;
}

/** The partner's own run once judged, or the 404 or 409 that says why not. */
async function judgedRun(c: Context<ApiEnv>, runs: Runs): Promise<RunRow | Response> {
  const run = await ownRun(c, runs);
  if (run instanceof Response) return run;
  if (run.status === 'open' || run.status === 'closing')
    return problem(
      c,
      409,
      'Run not judged yet',
      'the run is still open: finish it (POST /api/runs/{id}/finish) or wait until it ends',
    );
  return run;
}
