import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database } from '../db/database.js';
import { InternalError } from '../errors.js';
import type { LogLine } from '../observability/logger.js';
import type { Runs } from '../runs/runs.js';
import { hashSecret, newId } from '../secrets.js';
import { stageRoute } from './dispatch.js';

/**
 * The start-up warm-up: before `/readyz` says ready, the instance does once the slow first-time work a
 * fresh process would otherwise do on its first partners' calls — a throwaway certification run created
 * the ordinary way (a stage key taken, which starts the key pool filling; the run's key imported, its
 * mock started), then its stage driven in this process through Node's HTTP server (a private one on
 * 127.0.0.1, so that no request line, metric or fairness share counts it): tokens, `calls` partner API
 * calls recorded through the journal into the database (the hot statements prepared, the tables' first
 * pages read and written, V8's code for the whole path compiled and optimised). Then nothing of it
 * remains: its stage is closed and its run, exchanges, tokens, rate event and throwaway partner deleted
 * in one transaction — no audit line, no event, no evidence was ever written for it.
 *
 * Bounded: at `deadlineMs` the instance becomes ready whatever the warm-up's state (the journey stops,
 * its clean-up finishes in the background); a warm-up that fails is logged and the instance becomes
 * ready too. Never blocks an instance for ever.
 */
export interface WarmUpOptions {
  /** After this many ms the instance is ready whatever the warm-up's state (default 30000). */
  deadlineMs?: number;
  /** Partner API calls made to the throwaway run's stage (default 1000; 0: only its tokens). */
  calls?: number;
}

export const defaultWarmUp: Required<WarmUpOptions> = { deadlineMs: 30_000, calls: 1000 };

/** `/readyz`'s `checks.warmUp`: under way, done, turned off, failed or past its deadline (the last three ready). */
export type WarmUpState = 'warming up' | 'ok' | 'off' | 'failed' | 'overran';

export interface WarmUpOutcome {
  state: Exclude<WarmUpState, 'warming up'>;
  /** Calls answered by the throwaway run's stage, by status. */
  statuses: Record<string, number>;
  ms: number;
  /** Why it failed, when it did. */
  error?: string;
}

export interface WarmUp {
  state(): WarmUpState;
  /** Settles when the instance is ready as far as the warm-up goes (done, failed, overran or off). */
  readonly ready: Promise<WarmUpOutcome>;
  /** Settles when the warm-up has finished everything, its clean-up included. */
  readonly settled: Promise<void>;
  /** The service stops: the journey ends at once; resolves once its clean-up is done (at most 10 s). */
  stop(): Promise<void>;
}

/** The start of a warm-up partner's key hash, which no real partner's can have. */
const warmUpKeyMark = 'warm-up:';

/** How long a stop waits for a warm-up's clean-up under way. */
const stopWaitMs = 10_000;

/** The outcome's `error` when a stop asked for during the start-up ended the warm-up. */
const stoppedEarly = 'stopped before its end: the instance is stopping';

/** Calls in flight at once during the warm-up's journey. */
const inFlight = 16;

/** Starts the warm-up (or none, with `options` false): see `WarmUpOptions`. */
export function startWarmUp(
  deps: { db: Database; runs: Runs; log: LogLine; startedAt: number; signal?: AbortSignal | undefined },
  options: WarmUpOptions | false | undefined,
): WarmUp {
  if (options === false) {
    const outcome: WarmUpOutcome = { state: 'off', statuses: {}, ms: 0 };
    return {
      state: () => 'off',
      ready: Promise.resolve(outcome),
      settled: Promise.resolve(),
      stop: () => Promise.resolve(),
    };
  }
  const { deadlineMs, calls } = { ...defaultWarmUp, ...options };
  const began = performance.now();
  let state: WarmUpState = 'warming up';
  let stopped = false;
  const statuses: Record<string, number> = {};
  const outcome = (settled: Exclude<WarmUpState, 'warming up'>, error?: string): WarmUpOutcome => ({
    state: settled,
    statuses: { ...statuses },
    ms: Math.round(performance.now() - began),
    ...(error !== undefined && { error }),
  });
  let resolveReady!: (value: WarmUpOutcome) => void;
  const ready = new Promise<WarmUpOutcome>((resolve) => {
    resolveReady = resolve;
  });
  const become = (settled: Exclude<WarmUpState, 'warming up'>, error?: string) => {
    if (state !== 'warming up') return;
    state = settled;
    const result = outcome(settled, error);
    clearTimeout(deadline);
    // Only a stop asked for during the start-up (below) can end the journey while still warming up:
    // `stop()` is reachable once the instance is ready.
    if (stopped) {
      const failed = error !== undefined && error !== stoppedEarly ? `; its clean-up failed: ${error}` : '';
      deps.log(`warm-up stopped after ${result.ms} ms: the instance is stopping${failed}`, {
        event: 'warmup.stopped',
        ms: result.ms,
      });
      resolveReady(result);
      return;
    }
    deps.log(
      settled === 'ok'
        ? `warm-up done in ${result.ms} ms (${JSON.stringify(result.statuses)}): ready`
        : settled === 'overran'
          ? `warm-up still under way after its deadline of ${deadlineMs} ms: ready anyway (it finishes in the background)`
          : `warm-up failed after ${result.ms} ms, ready anyway (serving cold): ${error}`,
      { event: `warmup.${settled === 'ok' ? 'done' : settled}`, ms: result.ms, statuses: result.statuses },
    );
    resolveReady(result);
  };
  const deadline = setTimeout(() => become('overran'), deadlineMs);
  deadline.unref();
  // A stop asked for before the instance is ready (serve's signals): the journey ends at once and the
  // run is deleted before `ready` settles, so that a SIGTERM during the warm-up leaves nothing behind.
  const stopEarly = () => {
    stopped = true;
  };
  if (deps.signal?.aborted) stopEarly();
  else deps.signal?.addEventListener('abort', stopEarly, { once: true });
  const pastDeadline = () => stopped || performance.now() - began >= deadlineMs;
  const settled = warmUp(deps, { calls, statuses, pastDeadline })
    .then(
      () => become(stopped ? 'failed' : 'ok', stopped ? stoppedEarly : undefined),
      (error: unknown) => become('failed', (error as Error).message),
    )
    .finally(() => deps.signal?.removeEventListener('abort', stopEarly));
  return {
    state: () => state,
    ready,
    settled,
    stop() {
      stopped = true;
      // Its clean-up waits for the database: a stop does not wait longer than `stopWaitMs` for it (a
      // leftover is deleted by the next start's warm-up).
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, stopWaitMs);
      });
      return Promise.race([settled, waited]).finally(() => clearTimeout(timer));
    },
  };
}

/** The throwaway run: created, its stage driven, then every trace of it deleted (even when driving failed). */
async function warmUp(
  deps: { db: Database; runs: Runs; log: LogLine; startedAt: number },
  journey: { calls: number; statuses: Record<string, number>; pastDeadline: () => boolean },
): Promise<void> {
  const { db, runs } = deps;
  // A partner of its own, never announced: no audit line, and an API key nobody knows (the hash of
  // random bytes nobody kept), so that nothing can reach it through the API while it exists.
  // Its key hash is marked (a real one is 64 hex digits): what a warm-up killed half-way (SIGKILL) left
  // is found and deleted by the next one, once older than any warm-up under way can be.
  const partnerId = newId('ptn');
  await db.query('INSERT INTO partners (id, name, api_key_hash) VALUES ($1, $2, $3)', [
    partnerId,
    'start-up warm-up (deleted before the instance is ready)',
    `${warmUpKeyMark}${hashSecret(newId('ptn') + newId('ptn'))}`,
  ]);
  const leftovers = await db.query<{ id: string }>(
    `SELECT id FROM partners WHERE api_key_hash LIKE '${warmUpKeyMark}%' AND created_at < now() - interval '2 minutes'`,
  );
  for (const leftover of leftovers) {
    const leftRuns = await db.query<{ id: string }>('SELECT id FROM runs WHERE partner_id = $1', [
      leftover.id,
    ]);
    for (const run of leftRuns) await discard(deps, leftover.id, run.id);
    if (leftRuns.length === 0) await discard(deps, leftover.id, undefined);
    deps.log(`warm-up: deleted what an earlier warm-up, stopped half-way, left (partner ${leftover.id})`, {
      event: 'warmup.leftover_deleted',
    });
  }
  let runId: string | undefined;
  let failure: unknown;
  try {
    const run = await runs.create(partnerId, { certify: true });
    runId = run.id;
    await drive(runs, run, journey);
  } catch (error) {
    failure = error;
  }
  await discard(deps, partnerId, runId);
  if (failure) throw failure;
}

/** The run's stage reached through a private HTTP server on 127.0.0.1, as a partner's journey would. */
async function drive(
  runs: Runs,
  run: { baseUrl: string; clientId: string; clientSecret: string; authorizedScopes: readonly string[] },
  journey: { calls: number; statuses: Record<string, number>; pastDeadline: () => boolean },
): Promise<void> {
  const address = /\/runs\/([^/]+)\/api$/.exec(run.baseUrl)?.[1];
  if (!address) throw new InternalError(`the warm-up run's address could not be read from ${run.baseUrl}`);
  const server = createServer((req, res) => {
    const stage = stageRoute(req.url ?? '/');
    if (!stage) {
      res.writeHead(404).end();
      return;
    }
    runs.serveStage(address, stage.side, req, res, stage.rest).catch(() => {
      if (!res.headersSent) res.writeHead(503);
      if (!res.writableEnded) res.end();
    });
  });
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}/runs/${address}`;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: run.clientId,
      client_secret: run.clientSecret,
      // What the calls below need, where the plan grants it; else whatever it grants.
      scope: run.authorizedScopes.includes('read:loans') ? 'read:loans' : run.authorizedScopes.join(' '),
    }).toString();
    let token: Promise<{ value: string; partnerId: string }> | undefined;
    const fetchToken = async () => {
      for (let attempt = 0; attempt < 10 && !journey.pastDeadline(); attempt += 1) {
        const answer = await send(agent, `${origin}/auth/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form,
        });
        count(journey.statuses, `token ${answer.status}`);
        if (answer.status === 200) {
          const body = JSON.parse(answer.body) as { access_token: string; partnerId: string };
          return { value: body.access_token, partnerId: body.partnerId };
        }
      }
      throw new InternalError('the warm-up run’s token endpoint answered no token');
    };
    const tokenNow = () => {
      token ??= fetchToken();
      return token;
    };
    let left = journey.calls;
    const worker = async () => {
      while (left > 0 && !journey.pastDeadline()) {
        left -= 1;
        const current = await tokenNow();
        const answer = await send(agent, `${origin}/api/v3/partner/${current.partnerId}/loans?limit=5`, {
          headers: { authorization: `Bearer ${current.value}` },
        });
        count(journey.statuses, String(answer.status));
        // The plan revokes and expires tokens: a refused one is replaced, as a client would.
        if (answer.status === 401 && token !== undefined && (await token) === current) token = undefined;
      }
    };
    await tokenNow();
    await Promise.all(Array.from({ length: Math.min(inFlight, Math.max(1, journey.calls)) }, worker));
  } finally {
    agent.destroy();
    await closeServer(server);
  }
}

/**
 * Every trace of the throwaway run gone: the run no longer open (no call of it is recorded from then
 * on), its stage on this instance closed (by a sweep: it closes the stages of runs that are not open),
 * then the run, its exchanges, tokens, rate event and partner deleted in one transaction, the run's row
 * locked first so that a write of the journal's under way waits and then finds no run (it drops what
 * it holds for a run that is not there).
 */
async function discard(
  deps: { db: Database; runs: Runs; startedAt: number },
  partnerId: string,
  runId: string | undefined,
): Promise<void> {
  const { db, runs } = deps;
  if (runId !== undefined) {
    await db.query("UPDATE runs SET status = 'closing', closing_since = NULL WHERE id = $1", [runId]);
    await runs.sweep(deps.startedAt);
  }
  await db.transaction(async (tx) => {
    if (runId !== undefined) {
      await tx.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [runId]);
      await tx.query('DELETE FROM exchanges WHERE run_id = $1', [runId]);
      await tx.query('DELETE FROM run_tokens WHERE run_id = $1', [runId]);
      await tx.query('DELETE FROM runs WHERE id = $1', [runId]);
    }
    await tx.query('DELETE FROM rate_events WHERE partner_id = $1', [partnerId]);
    await tx.query('DELETE FROM partners WHERE id = $1', [partnerId]);
  });
}

const count = (statuses: Record<string, number>, status: string) => {
  statuses[status] = (statuses[status] ?? 0) + 1;
};

/** One HTTP request through `agent`: its status and body. */
function send(
  agent: Agent,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {}, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () =>
      req.destroy(
        new InternalError(
          `the warm-up's call to ${new URL(url).pathname.split('/').slice(3).join('/')} took over 10 s`,
        ),
      ),
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
