import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  assembleSession,
  type ClientReport,
  type ClientSession,
  defaultApiDelayMs,
  defaultLongTtlSeconds,
  defaultMaxExchanges,
  defaultScopes,
  defaultTokenDelayMs,
  defaultTtlSeconds,
  formatClientHtmlReport,
  formatJsonReport,
  formatSession,
  type HostedStage,
  type JourneyRecord,
  judgeSession,
  newStageClient,
  openHostedStage,
  playScenarios,
  reportVerdict,
  type ScenarioName,
  type StageServer,
  type StageSigningKey,
  scenarioNames,
  signEnvelope,
  stageInfoOf,
  testResultStatement,
} from '@partner-lending/conformance';
import { scopes as allScopes } from '@partner-lending/spec';
import type { Database } from '../db/database.js';
import type { SigningKey } from '../keys.js';
import { observeJudge } from '../observability/judging.js';
import { newId, secretsKeyFrom } from '../secrets.js';
import { RunRefusal, refuseOverLimits } from './admission.js';
import { runJournal } from './journal.js';
import { databaseLedger, ledgerContents } from './ledger.js';
import { openRunSecrets, runClientSecret, type SealedStageKey, sealStageKey } from './run-secrets.js';
import { stageKeyPool } from './stage-keys.js';

/** What a partner may ask of a run (the body of `POST /api/runs`); everything optional. */
export interface RunRequest {
  ttlSeconds?: number;
  longTtlSeconds?: number;
  scenarios?: ScenarioName[];
  scopes?: string[];
  integration?: { name?: string; version?: string };
  certify?: boolean;
}

/** How long runs last and how many a partner may hold. */
export interface RunLimits {
  /** A run that receives nothing for this long is judged. Default 600 s (10 minutes). */
  idleSeconds: number;
  /** A run is judged at the latest this long after it was created. Default 3600 s. */
  maxDurationSeconds: number;
  /** Exchanges recorded per run at most; past it they are counted, not kept. Default 50000. */
  maxExchanges: number;
  /** Open runs per partner at once. Default 5. */
  maxOpenRunsPerPartner: number;
  /** Runs a partner may create per hour. Default 60. */
  maxRunsPerHour: number;
}

export const defaultRunLimits: RunLimits = {
  idleSeconds: 600,
  maxDurationSeconds: 3600,
  maxExchanges: defaultMaxExchanges,
  maxOpenRunsPerPartner: 5,
  maxRunsPerHour: 60,
};

/** The stage configuration a run keeps (everything an instance needs to serve it). */
interface StoredStage {
  authUrl: string;
  baseUrl: string;
  partnerId: string;
  authorizedScopes: string[];
  enabled: ScenarioName[];
  grant: string[];
  ttlSeconds: number;
  longTtlSeconds: number;
  tokenDelayMs: number;
  apiDelayMs: number;
}

interface RunRow {
  id: string;
  partner_id: string;
  status: 'open' | 'closing' | 'judged' | 'interrupted';
  created_at: Date | string;
  started_epoch_ms: string | number;
  expires_at: Date | string;
  finished_at: Date | string | null;
  certify: boolean;
  integration: { name?: string; version?: string } | null;
  stage: StoredStage;
  client_id: string;
  /** Only for a run open across the upgrade to sealed secrets; NULL otherwise (see run-secrets.ts). */
  client_secret: string | null;
  client_secret_sha256: string | null;
  signing_key: StageSigningKey | SealedStageKey | null;
  max_exchanges: number;
  /** The run's last number: the last given (shared numbering) or the highest recorded. */
  seq: number;
  idle_seconds: number;
  journey: JourneyRecord | null;
  report_json: string | null;
  verdict: string | null;
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export interface RunsOptions {
  db: Database;
  publicUrl: string;
  key: SigningKey;
  /** Stage keys prepared ahead (generated one at a time; see `stageKeyPool`). Default 4. */
  preparedStageKeys?: number;
  /** What seals a run's reusable secrets (see `secretsKeyFrom`). Default: derived from `key`. */
  secretsKey?: Buffer;
  limits: RunLimits;
  /** Delays of the stage (ms); the CLI's defaults. */
  tokenDelayMs?: number;
  apiDelayMs?: number;
  log: (line: string, fields?: Record<string, unknown>) => void;
}

/** Runs: created by partners, served by any instance, judged once, signed. */
export function createRuns(options: RunsOptions) {
  const { db, publicUrl, limits } = options;
  const stages = new Map<string, Promise<HostedStage>>();
  const stageKeys = stageKeyPool({ size: options.preparedStageKeys ?? 4 });
  const secretsKey = options.secretsKey ?? secretsKeyFrom(options.key.privateKey);
  const journal = runJournal(db);

  async function create(partnerId: string, request: RunRequest) {
    const id = newId('run');
    const enabled = request.scenarios ?? [...scenarioNames];
    const narrowed = enabled.includes('narrowed-grant');
    const grant = narrowed ? (request.scopes ?? [...defaultScopes]) : [...allScopes];
    const client = newStageClient(grant);
    const stage: StoredStage = {
      authUrl: `${publicUrl}/runs/${id}/auth`,
      baseUrl: `${publicUrl}/runs/${id}/api`,
      partnerId: client.partnerId,
      authorizedScopes: grant,
      enabled,
      grant,
      ttlSeconds: request.ttlSeconds ?? defaultTtlSeconds,
      longTtlSeconds: request.longTtlSeconds ?? defaultLongTtlSeconds,
      tokenDelayMs: options.tokenDelayMs ?? defaultTokenDelayMs,
      apiDelayMs: options.apiDelayMs ?? defaultApiDelayMs,
    };
    const { clientId } = client;
    const { secret: clientSecret, sha256: clientSecretSha256 } = runClientSecret(secretsKey, id);
    // Limits first, with reads only: a refused creation costs no key and no lock.
    await refuseOverLimits(db, partnerId, limits);
    const signingKey = await stageKeys.take(partnerId);
    const scenarioState = playScenarios(new Set(enabled), grant).state();
    const now = Date.now();
    const expiresAt = new Date(now + limits.maxDurationSeconds * 1000);
    await db.transaction(async (tx) => {
      // One partner's runs are counted under its row's lock: two creations at once cannot both pass.
      await tx.query('SELECT id FROM partners WHERE id = $1 FOR UPDATE', [partnerId]);
      await refuseOverLimits(tx, partnerId, limits);
      await tx.query("DELETE FROM rate_events WHERE partner_id = $1 AND at < now() - interval '1 hour'", [
        partnerId,
      ]);
      await tx.query('INSERT INTO rate_events (partner_id) VALUES ($1)', [partnerId]);
      await tx.query(
        `INSERT INTO runs (id, partner_id, status, started_epoch_ms, expires_at, idle_seconds, certify, integration,
           stage, client_id, client_secret_sha256, signing_key, max_exchanges, scenario_state)
         VALUES ($1, $2, 'open', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        [
          id,
          partnerId,
          now,
          expiresAt,
          limits.idleSeconds,
          request.certify === true,
          request.integration ? JSON.stringify(request.integration) : null,
          JSON.stringify(stage),
          clientId,
          clientSecretSha256,
          JSON.stringify(sealStageKey(secretsKey, id, signingKey)),
          limits.maxExchanges,
          JSON.stringify(scenarioState),
        ],
      );
    });
    // The run's stage opens on this instance now (its key imported, its mock started), not on its
    // first call; another instance opens it on the first call it serves.
    void row(id)
      .then(async (created) => {
        if (created?.status === 'open') await stageOf(created);
      })
      .catch(() => {});
    return {
      id,
      authUrl: stage.authUrl,
      baseUrl: stage.baseUrl,
      tokenUrl: `${stage.authUrl}/oauth/token`,
      audience: stage.baseUrl,
      clientId,
      clientSecret,
      authorizedScopes: grant,
      plan: planOf(scenarioState.records),
      ttlSeconds: stage.ttlSeconds,
      longTtlSeconds: stage.longTtlSeconds,
      certify: request.certify === true,
      expiresAt: expiresAt.toISOString(),
      idleSeconds: limits.idleSeconds,
    };
  }

  const planOf = (records: ReturnType<ReturnType<typeof playScenarios>['state']>['records']) =>
    records.map((item) => ({ name: item.name, enabled: item.enabled, plan: item.plan }));

  async function row(id: string): Promise<RunRow | undefined> {
    const [found] = await db.query<RunRow & Record<string, unknown>>('SELECT * FROM runs WHERE id = $1', [
      id,
    ]);
    return found;
  }

  /** This instance's stage of an open run (opened on first use, from the run's row). */
  function stageOf(run: RunRow): Promise<HostedStage> {
    let stage = stages.get(run.id);
    if (!stage) {
      const secrets = openRunSecrets(secretsKey, run);
      stage = openHostedStage({
        ledger: databaseLedger(
          db,
          journal,
          {
            id: run.id,
            enabled: new Set(run.stage.enabled),
            grant: run.stage.grant,
            seq: run.seq,
          },
          (error) => options.log(`run ${run.id}: ${error.message}`),
        ),
        client: {
          clientId: run.client_id,
          clientSecret: secrets.clientSecret,
          partnerId: run.stage.partnerId,
          authorizedScopes: run.stage.authorizedScopes,
        },
        authUrl: run.stage.authUrl,
        baseUrl: run.stage.baseUrl,
        startedAtEpoch: Number(run.started_epoch_ms),
        ttlSeconds: run.stage.ttlSeconds,
        longTtlSeconds: run.stage.longTtlSeconds,
        signingKey: secrets.signingKey,
        tokenDelayMs: run.stage.tokenDelayMs,
        apiDelayMs: run.stage.apiDelayMs,
      });
      stages.set(run.id, stage);
      stage.catch(() => stages.delete(run.id));
    }
    return stage;
  }

  async function closeStage(id: string): Promise<void> {
    const stage = stages.get(id);
    stages.delete(id);
    journal.forget(id);
    if (stage) await (await stage).close().catch(() => {});
  }

  /**
   * Serves a request of a run's stage: `server` and the target below the run's prefix. A run that is
   * not open (unknown, ended) is answered 404 and recorded nowhere.
   */
  async function serveStage(
    runId: string,
    server: StageServer,
    req: IncomingMessage,
    res: ServerResponse,
    target: string,
  ): Promise<void> {
    // A stage this instance holds needs no read: its ledger refuses the call (404) once the run ended.
    const held = stages.get(runId);
    if (held) {
      await (await held).handle(server, req, res, target);
      return;
    }
    const run = await row(runId);
    if (run?.status !== 'open') {
      if (run) void closeStage(run.id);
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: 'invalid_request',
          error_description: 'no open certification run at this address (it ended, or never existed)',
        }),
      );
      return;
    }
    const stage = await stageOf(run);
    await stage.handle(server, req, res, target);
  }

  /**
   * Judges a run once, whichever instance asks first: the run is claimed (open → closing) in one
   * statement, judged, and stored (→ judged or interrupted). Resolves with false when another claim won.
   */
  const judge = observeJudge(judgeRun, (_, ending) =>
    ending.how === 'interrupted' ? 'interrupted' : 'judged',
  );
  async function judgeRun(
    id: string,
    ending: { journeyExitCode?: number | null; how: 'finished' | 'idle' | 'duration' | 'interrupted' },
  ): Promise<boolean> {
    const claimed = await db.query(
      "UPDATE runs SET status = 'closing', closing_since = now() WHERE id = $1 AND (status = 'open' OR (status = 'closing' AND closing_since < now() - interval '2 minutes')) RETURNING id",
      [id],
    );
    if (claimed.length === 0) return false;
    // From here no instance records for the run (the ledger records only while it is open): the
    // session read below is every exchange that was answered.
    await closeStage(id);
    const run = (await row(id))!;
    const contents = await ledgerContents(db, id);
    const finishedAt = Date.now();
    const startedAtEpoch = Number(run.started_epoch_ms);
    const journey: JourneyRecord = {
      command: [],
      exitCode: ending.journeyExitCode ?? null,
      signal: null,
      durationMs: finishedAt - startedAtEpoch,
      ending:
        ending.how === 'finished' ? 'exited' : ending.how === 'interrupted' ? 'interrupted' : 'duration',
      ...(ending.how === 'idle' && {
        note: `the run received nothing for ${run.idle_seconds} s and was judged`,
      }),
      ...(ending.how === 'duration' && { note: 'the run reached its maximum duration and was judged' }),
      ...(ending.how === 'interrupted' && {
        note: 'the run was open when the service stopped, and past its deadline when it came back: judged on what was recorded',
      }),
      ...(ending.how === 'finished' &&
        ending.journeyExitCode === undefined && {
          note: 'finished by the partner; no journey exit code given',
        }),
    };
    const session: ClientSession = assembleSession({
      stage: stageInfoOf(run.stage),
      startedAtEpoch,
      durationMs: finishedAt - startedAtEpoch,
      journey,
      contents,
      maxExchanges: run.max_exchanges,
      integration: run.integration ?? undefined,
      redact: (text) => text,
    });
    const sessionText = formatSession(session);
    const sessionSha256 = createHash('sha256').update(sessionText).digest('hex');
    const judged: ClientReport = judgeSession(session, {
      certify: run.certify,
      provenance: { source: 'service', sessionSha256 },
    });
    const runUrl = `${publicUrl}/api/runs/${id}`;
    const report = { ...judged, run: { id, url: runUrl } } as ClientReport;
    const reportJson = formatJsonReport(report);
    const statement = testResultStatement({
      sessionBytes: sessionText,
      report,
      sessionName: `${id}.session.json`,
      url: runUrl,
    });
    const envelope = signEnvelope(
      Buffer.from(JSON.stringify(statement)),
      options.key.privateKey,
      options.key.kid,
    );
    const status = ending.how === 'interrupted' ? 'interrupted' : 'judged';
    await db.query(
      `UPDATE runs SET status = $2, finished_at = $3, journey = $4, session_text = $5, session_sha256 = $6,
         report_json = $7, report_html = $8, verdict = $9, attestation = $10, client_secret = NULL, signing_key = NULL
       WHERE id = $1 AND status = 'closing'`,
      [
        id,
        status,
        new Date(finishedAt),
        JSON.stringify(journey),
        sessionText,
        sessionSha256,
        reportJson,
        formatClientHtmlReport(report, session),
        reportVerdict(report).word,
        `${JSON.stringify(envelope, null, 2)}\n`,
      ],
    );
    options.log(
      `run ${id}: ${status}, ${reportVerdict(report).word} (${contents.exchanges.length} exchanges)`,
      {
        event: 'run.judged',
        runId: id,
        partnerId: run.partner_id,
        status,
        verdict: reportVerdict(report).word,
      },
    );
    return true;
  }

  /** Judges the runs that idled or passed their deadline; run by every instance now and then. */
  async function sweep(startedAt: number): Promise<void> {
    // The stages this instance holds for runs another instance ended.
    if (stages.size > 0) {
      const ended = await db.query<{ id: string }>(
        "SELECT id FROM runs WHERE id = ANY($1) AND status <> 'open'",
        [[...stages.keys()]],
      );
      for (const { id } of ended) await closeStage(id);
    }
    const due = await db.query<{ id: string; expired: boolean; idle: boolean; last: Date | string }>(
      `SELECT id, expires_at < now() AS expired, last_activity_at < now() - make_interval(secs => idle_seconds) AS idle,
         last_activity_at AS last
       FROM runs WHERE (status = 'open' AND (expires_at < now() OR last_activity_at < now() - make_interval(secs => idle_seconds)))
          OR (status = 'closing' AND closing_since < now() - interval '2 minutes')`,
    );
    for (const run of due) {
      // Past its deadline before this instance even started: nobody served it to the end.
      const how =
        new Date(run.last).getTime() < startedAt && run.expired
          ? 'interrupted'
          : run.expired
            ? 'duration'
            : 'idle';
      await judge(run.id, { how }).catch((error: unknown) =>
        options.log(`run ${run.id}: judging failed: ${(error as Error).message}`),
      );
    }
  }

  async function close(): Promise<void> {
    stageKeys.close();
    await Promise.all([...stages.keys()].map(closeStage));
  }

  return {
    create,
    row,
    serveStage,
    judge,
    sweep,
    close,
  };
}

export type Runs = ReturnType<typeof createRuns>;
export type { RunRow };
export { iso, RunRefusal };
