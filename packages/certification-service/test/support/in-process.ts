import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  addPartner,
  addReviewer,
  type Database,
  loadSigningKey,
  openDatabase,
  type RunningService,
  type ServiceOptions,
  startService,
} from '../../src/index.js';
import { defaultPlan } from '../../src/plan/plan.js';

export interface InProcessService {
  service: RunningService;
  db: Database;
  dir: string;
  lines: string[];
  partner(name: string): Promise<{ partnerId: string; apiKey: string }>;
  reviewer(name: string): Promise<{ reviewerId: string; credential: string }>;
  close(): Promise<void>;
}

/** One instance in this process on a fresh embedded store (or `databaseUrl`), its log lines kept. */
export async function inProcessService(
  options: Partial<ServiceOptions> & { databaseUrl?: string; keyFile?: string } = {},
): Promise<InProcessService> {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-inproc-'));
  const db =
    options.db ?? (await openDatabase({ databaseUrl: options.databaseUrl, dataDir: join(dir, 'data') }));
  const lines: string[] = [];
  const signingKey =
    options.signingKey ??
    (await loadSigningKey({ file: options.keyFile, dataDir: dir, warn: (line) => lines.push(line) }));
  const service = await startService({
    port: 0,
    // The start-up warm-up is tested on its own (warmup.test.ts); the rest start without it, as fast as before.
    warmUp: false,
    ...options,
    db,
    signingKey,
    log: (line) => lines.push(line),
  });
  return {
    service,
    db,
    dir,
    lines,
    partner: (name) => addPartner(db, name),
    reviewer: (name) => addReviewer(db, name),
    async close() {
      await service.close();
      if (!options.db) await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function ed25519Pem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

/**
 * A judged, attested run row, as the runs room leaves one (a decision rests on its attestation), for
 * the production tests: `attestation` the file's text (default: one naming the run).
 */
export async function attestedRun(db: Database, partnerId: string, attestation?: string): Promise<string> {
  const id = `run_${Math.random().toString(36).slice(2, 12)}`;
  await db.query(
    `WITH run AS (
       INSERT INTO runs (id, partner_id, status, started_epoch_ms, expires_at, idle_seconds, certify, stage, client_id,
         max_exchanges, verdict, attestation, finished_at)
       VALUES ($1, $2, 'judged', 0, now(), 60, true, '{}', $3, 100, 'PASS', $4, now()) RETURNING id)
     INSERT INTO run_scenarios (run_id, state) SELECT id, '{}' FROM run`,
    [id, partnerId, `cid_${id}`, attestation ?? `{"attestation":"${id}"}\n`],
  );
  return id;
}

/** A judged, attested certification run under the default plan that approvability passes. */
export async function approvableRun(db: Database, partnerId: string): Promise<string> {
  const id = `run_${Math.random().toString(36).slice(2, 12)}`;
  const report = {
    coverage: {
      operations: defaultPlan.operations.map((item) => ({
        operationId: item.operationId,
        calls: 2,
        succeeded: 1,
      })),
      scenarios: [...defaultPlan.scenarios, 'renewal'].map((scenario) => ({ id: scenario, met: true })),
      mustNotVerified: [],
    },
    checks: defaultPlan.decisiveShouldChecks.map((check) => ({
      id: check,
      severity: 'should',
      status: 'passed',
    })),
    certification: { passed: true, reasons: [] },
  };
  await db.query(
    `WITH run AS (
       INSERT INTO runs (id, partner_id, status, started_epoch_ms, expires_at, idle_seconds, certify, stage, client_id,
         max_exchanges, verdict, attestation, finished_at, plan, report_json)
       VALUES ($1, $2, 'judged', 0, now(), 60, true, '{}', $3, 100, 'PASS', $4, now(), $5, $6) RETURNING id)
     INSERT INTO run_scenarios (run_id, state) SELECT id, '{}' FROM run`,
    [
      id,
      partnerId,
      `cid_${id}`,
      `{"attestation":"${id}"}\n`,
      JSON.stringify(defaultPlan),
      JSON.stringify(report),
    ],
  );
  return id;
}
