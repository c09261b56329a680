import type {
  HostedStage,
  JourneyRecord,
  ScenarioName,
  ScenarioState,
  StageSigningKey,
} from '@partner-lending/conformance';
import { defaultMaxExchanges } from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import { ServiceError } from '../errors.js';
import type { JudgingPool } from '../judging/pool.js';
import type { SigningKey } from '../keys.js';
import type { LogLine } from '../observability/logger.js';
import type { DigestedPlan } from '../plan/plan.js';
import type { Journal } from '../recording/journal.js';
import type { SealedStageKey } from './run-secrets.js';
import type { StageKeyPool } from './stage-keys.js';

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
export interface StoredStage {
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

export interface RunRow {
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
  /** The scenario plan as it plays (`ScenarioState`): which steps fired when. */
  scenario_state: ScenarioState;
  /** The run's last number: the last given (shared numbering) or the highest recorded. */
  seq: number;
  /** Tokens the run's stage issued (numbered `T1`, `T2`, …). */
  token_count: number;
  idle_seconds: number;
  journey: JourneyRecord | null;
  report_json: string | null;
  verdict: string | null;
  /** The signed DSSE envelope, once judged. */
  attestation: string | null;
  /** The certification plan the run followed; null for a practice run. */
  plan: DigestedPlan | null;
  /** The run's address (the capability in its URLs); null for runs made before addresses (their id). */
  address: string | null;
}

/** Why a run was refused: a request against the plan (400), a limit reached (429) or a conflict with its state (409). */
export class RunRefusal extends ServiceError {
  constructor(
    readonly status: 400 | 409 | 429,
    readonly title: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super('ERR_RUN_REFUSED', message);
    this.name = 'RunRefusal';
  }
}

export const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export interface RunsOptions {
  db: Database;
  publicUrl: string;
  key: SigningKey;
  /** Stage keys prepared ahead (generated one at a time; see `stageKeyPool`). Default 4. */
  preparedStageKeys?: number;
  /** What seals a run's reusable secrets (see `secretsKeyFrom`). Default: derived from `key`. */
  secretsKey?: Buffer;
  limits: RunLimits;
  /** Where runs are judged: threads of their own, each partner in turn (see `judgingPool`). */
  judging: JudgingPool;
  /** The vendor's plan that every certification run follows. Default `defaultPlan`. */
  plan?: DigestedPlan;
  /** The service's version, named in every report (default the package's). */
  version?: string;
  /** Delays of the stage (ms); the CLI's defaults. */
  tokenDelayMs?: number;
  apiDelayMs?: number;
  /**
   * On the embedded store, answer a call once its exchange is written to the journal file and fill the
   * database from it in the background (default true); false: each call waits for its statement.
   */
  journalFile?: boolean;
  log: LogLine;
}

/** What the parts of the runs room share: the options, the journal, and this instance's stages. */
export interface RunsContext extends RunsOptions {
  plan: DigestedPlan;
  journal: Journal;
  /** Stage keys generated ahead, off the request path. */
  stageKeys: StageKeyPool;
  /** Seals and opens a run's client secret and stage key. */
  secretsKey: Buffer;
  stages: Map<string, Promise<HostedStage>>;
  row(id: string): Promise<RunRow | undefined>;
  stageOf(run: RunRow): Promise<HostedStage>;
  closeStage(id: string): Promise<void>;
}

/**
 * The fields a practice run may set and a certification run may not (the vendor's plan sets them):
 * refused with `"certify": true` by the service and by its OpenAPI document alike.
 */
export const planFields = ['scenarios', 'scopes', 'ttlSeconds', 'longTtlSeconds'] as const;
