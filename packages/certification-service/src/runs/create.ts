import {
  defaultApiDelayMs,
  defaultLongTtlSeconds,
  defaultMaxExchanges,
  defaultScopes,
  defaultTokenDelayMs,
  defaultTtlSeconds,
  newStageClient,
  playScenarios,
  type ScenarioName,
  scenarioNames,
} from '@partner-lending/conformance';
import { scopes as allScopes } from '@partner-lending/spec';
import type { Queryable } from '../db/database.js';
import { newId, newRunAddress } from '../secrets.js';
import { refuseOverLimits } from './admission.js';
import { runClientSecret, sealStageKey } from './run-secrets.js';
import { planFields, RunRefusal, type RunRequest, type RunsContext, type StoredStage } from './types.js';

/** The fields a certification run takes from the vendor's plan, never from the partner. */

/**
 * Creates a run: a certification run (`certify: true`) follows the vendor's plan and refuses every field
 * that would change it; a practice run takes the partner's overrides and is never approvable.
 */
export async function createRun(ctx: RunsContext, partnerId: string, request: RunRequest) {
  const { db, publicUrl, limits } = ctx;
  const certify = request.certify === true;
  const overridden = planFields.filter((field) => request[field] !== undefined);
  if (certify && overridden.length > 0)
    throw new RunRefusal(
      400,
      'The plan is the vendor’s',
      `a certification run ("certify": true) follows the vendor's certification plan ${ctx.plan.id} (${ctx.plan.digest.slice(0, 12)}…), which the partner cannot change: remove ${overridden.map((field) => `"${field}"`).join(', ')}, or leave out "certify" for a practice run (overrides allowed, never approvable)`,
    );
  // Limits first, with reads only: a refused creation costs no key and no lock.
  await refuseOverLimits(db, partnerId, limits);
  const id = newId('run');
  const address = newRunAddress();
  const enabled: ScenarioName[] = certify
    ? [...ctx.plan.scenarios]
    : (request.scenarios ?? [...scenarioNames]);
  // A certification run's client is authorised for the plan's scopes (what production grants); the
  // narrowed grant is then played by its token endpoint. A practice run keeps the CLI's settings.
  const narrowed = enabled.includes('narrowed-grant');
  const grant: string[] = certify
    ? [...ctx.plan.scopes]
    : narrowed
      ? (request.scopes ?? [...defaultScopes])
      : [...allScopes];
  const client = newStageClient(grant);
  const stage: StoredStage = {
    authUrl: `${publicUrl}/runs/${address}/auth`,
    baseUrl: `${publicUrl}/runs/${address}/api`,
    partnerId: client.partnerId,
    authorizedScopes: grant,
    enabled,
    grant,
    ttlSeconds: certify ? ctx.plan.ttlSeconds : (request.ttlSeconds ?? defaultTtlSeconds),
    longTtlSeconds: certify ? ctx.plan.longTtlSeconds : (request.longTtlSeconds ?? defaultLongTtlSeconds),
    tokenDelayMs: ctx.tokenDelayMs ?? defaultTokenDelayMs,
    apiDelayMs: ctx.apiDelayMs ?? defaultApiDelayMs,
  };
  const { clientId } = client;
  const { secret: clientSecret, sha256: clientSecretSha256 } = runClientSecret(ctx.secretsKey, id);
  const signingKey = await ctx.stageKeys.take(partnerId);
  const scenarioState = playScenarios(new Set(enabled), grant).state();
  const now = Date.now();
  const expiresAt = new Date(now + limits.maxDurationSeconds * 1000);
  await db.transaction(async (tx) => {
    await admit(tx, ctx, partnerId);
    await tx.query(
      `WITH created AS (
         INSERT INTO runs (id, partner_id, status, started_epoch_ms, expires_at, idle_seconds, certify, integration,
           stage, client_id, client_secret_sha256, signing_key, max_exchanges, plan, address)
         VALUES ($1, $2, 'open', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id)
       INSERT INTO run_scenarios (run_id, state) SELECT id, $15 FROM created`,
      [
        id,
        partnerId,
        now,
        expiresAt,
        limits.idleSeconds,
        certify,
        request.integration ? JSON.stringify(request.integration) : null,
        JSON.stringify(stage),
        clientId,
        clientSecretSha256,
        JSON.stringify(sealStageKey(ctx.secretsKey, id, signingKey)),
        // Never more than a session file may hold: a run's own session always judges again.
        Math.min(limits.maxExchanges, defaultMaxExchanges),
        certify ? JSON.stringify(ctx.plan) : null,
        address,
        JSON.stringify(scenarioState),
      ],
    );
  });
  // The run's stage opens on this instance now (its key imported, its mock started), not on its
  // first call; another instance opens it on the first call it serves.
  void ctx
    .row(id)
    .then(async (created) => {
      if (created?.status === 'open') await ctx.stageOf(created);
    })
    .catch(() => {});
  return {
    id,
    kind: certify ? ('certification' as const) : ('practice' as const),
    certificationPlan: certify ? { id: ctx.plan.id, digest: ctx.plan.digest } : null,
    authUrl: stage.authUrl,
    baseUrl: stage.baseUrl,
    tokenUrl: `${stage.authUrl}/oauth/token`,
    audience: stage.baseUrl,
    clientId,
    clientSecret,
    authorizedScopes: grant,
    plan: scenarioState.records.map((item) => ({ name: item.name, enabled: item.enabled, plan: item.plan })),
    ttlSeconds: stage.ttlSeconds,
    longTtlSeconds: stage.longTtlSeconds,
    certify,
    expiresAt: expiresAt.toISOString(),
    idleSeconds: limits.idleSeconds,
  };
}

/** One partner's runs are counted under its row's lock: two creations at once cannot both pass. */
async function admit(tx: Queryable, ctx: RunsContext, partnerId: string): Promise<void> {
  await tx.query('SELECT id FROM partners WHERE id = $1 FOR UPDATE', [partnerId]);
  await refuseOverLimits(tx, partnerId, ctx.limits);
  await tx.query("DELETE FROM rate_events WHERE partner_id = $1 AND at < now() - interval '1 hour'", [
    partnerId,
  ]);
  await tx.query('INSERT INTO rate_events (partner_id) VALUES ($1)', [partnerId]);
}
