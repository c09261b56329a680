import { type HostedStage, openHostedStage } from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import type { LogLine } from '../observability/logger.js';
import type { Journal } from '../recording/journal.js';
import { databaseLedger } from '../recording/ledger.js';
import { openRunSecrets } from './run-secrets.js';
import type { RunRow } from './types.js';

/**
 * Opens this instance's stage of an open run from its row: the conformance suite's hosted stage over
 * the run's ledger in the database, with the run's client and keys (unsealed with the secrets key).
 */
export function openRunStage(
  db: Database,
  journal: Journal,
  secretsKey: Parameters<typeof openRunSecrets>[0],
  run: RunRow,
  log: LogLine,
): Promise<HostedStage> {
  const secrets = openRunSecrets(secretsKey, run);
  return openHostedStage({
    ledger: databaseLedger(
      db,
      journal,
      {
        id: run.id,
        enabled: new Set(run.stage.enabled),
        grant: run.stage.grant,
        seq: run.seq,
        tokenCount: run.token_count,
        state: run.scenario_state,
        expiresAt: new Date(run.expires_at).getTime(),
      },
      (error) => log(`run ${run.id}: ${error.message}`),
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
}
