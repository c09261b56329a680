import type { IncomingMessage, ServerResponse } from 'node:http';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, importSPKI } from 'jose';
import { Redactor } from '../../common/redact.js';
import type { ClientReport, RunNames } from '../../common/report.js';
import type { DigestedPlan, StageInfo } from '../session.js';
import { stageInfoOf } from './assemble.js';
import { createStageHandler, type StageServer } from './handler.js';
import type { StageLedger } from './ledger.js';
import { ByteBudget, defaultMaxHeldBytes } from './request-reader.js';
import { shortPhaseLifetimes } from './scenarios.js';
import { tokenDraftOf } from './tokens.js';

/** The RS256 key a hosted run's tokens are signed with, as PEM text (every instance serving the run loads it). */
export interface StageSigningKey {
  /** PKCS #8 PEM of the private key. */
  privateKeyPem: string;
  /** SPKI PEM of the public key. */
  publicKeyPem: string;
}

/** A fresh RS256 signing key for a hosted run. */
export async function generateStageSigningKey(): Promise<StageSigningKey> {
  const pair = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  return {
    privateKeyPem: await exportPKCS8(pair.privateKey),
    publicKeyPem: await exportSPKI(pair.publicKey),
  };
}

/**
 * What `POST /api/runs` of the certification service answers (its OpenAPI `CreatedRun`): the hosted run,
 * its stage's addresses and client, its grant, its scenarios and its limits. The hosted client command
 * reads it and the service types its answer with it, so a field renamed on one side fails the other's build.
 */
export interface CreatedRun {
  id: string;
  kind: 'certification' | 'practice';
  /** The vendor's plan a certification run follows; null for a practice run. */
  certificationPlan: { id: string; digest: string } | null;
  authUrl: string;
  baseUrl: string;
  tokenUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  authorizedScopes: string[];
  plan: Array<{ name: string; enabled: boolean; plan: string }>;
  ttlSeconds: number;
  longTtlSeconds: number;
  certify: boolean;
  /** ISO time the run ends at the latest. */
  expiresAt: string;
  /** The run ends after this long without a call. */
  idleSeconds: number;
}

/**
 * What `POST /api/runs/{id}/finish` of the certification service answers, as far as the hosted client
 * command reads it: the judged run's report and its status. The service types its answer with it.
 */
export interface FinishedRun {
  report: ClientReport;
  status: string;
}

export interface HostedStageOptions {
  /** Where the stage keeps everything (a database for a hosted run; see `StageLedger`). */
  ledger: StageLedger;
  /** The run's client (its secret is redacted from everything recorded) and its grant. */
  client: { clientId: string; clientSecret: string; partnerId: string; authorizedScopes: readonly string[] };
  /** The URLs the journey uses: the token endpoint's base and the partner API's, under the service's origin. */
  authUrl: string;
  baseUrl: string;
  /** When the run started (epoch ms): every time recorded is ms since then. */
  startedAtEpoch: number;
  ttlSeconds: number;
  longTtlSeconds: number;
  signingKey: StageSigningKey;
  tokenDelayMs: number;
  apiDelayMs: number;
  /** Request-body bytes all requests being read may hold at once. Default 64 MiB. */
  maxHeldBytes?: number;
  /** Epoch ms clock. Default Date.now. */
  clock?: () => number;
  /**
   * The names the host gives the run — the vendor's partner, the service (URL, version) and, for a
   * certification run, the plan it follows — handed back as `names` for `assembleSession({ names })`.
   */
  names?: Omit<RunNames, 'plan'> & { plan?: DigestedPlan };
}

/** One instance's handle on a hosted run's stage: any number of instances may hold one for the same run. */
export interface HostedStage {
  /** What the session file says of the stage. */
  readonly info: StageInfo;
  /** The names the host gave (`HostedStageOptions.names`), for `assembleSession({ names })`. */
  readonly names: Omit<RunNames, 'plan'> & { plan?: DigestedPlan };
  /**
   * Answers a request of the run and records it in the ledger before the answer leaves. `target` is the
   * path and query below the run's `authUrl` or `baseUrl`.
   */
  handle(server: StageServer, req: IncomingMessage, res: ServerResponse, target: string): Promise<void>;
  /** Redacts the run's client credentials (in every encoding) from a text. */
  redact(text: string): string;
  close(): Promise<void>;
}

/**
 * Opens the stage of a hosted run on this instance: the same request handler, scenario plan and
 * recording as `startStage`, with its state in `ledger` instead of in memory, and every exchange kept
 * before it is answered. The mock behind it listens on 127.0.0.1 only.
 */
export async function openHostedStage(options: HostedStageOptions): Promise<HostedStage> {
  const clock = options.clock ?? Date.now;
  const { client, ttlSeconds, longTtlSeconds, startedAtEpoch } = options;
  const shortPhaseMs = shortPhaseLifetimes * ttlSeconds * 1000;
  const since = () => clock() - startedAtEpoch;
  const redactor = new Redactor();
  redactor.addSecret(client.clientSecret, '[client_secret]');
  redactor.addSecret(client.clientId, '[client_id]');
  redactor.addBasicCredentials(client.clientId, client.clientSecret, '[client_credentials]');
  const signingKey = {
    privateKey: await importPKCS8(options.signingKey.privateKeyPem, 'RS256'),
    publicKey: await importSPKI(options.signingKey.publicKeyPem, 'RS256', { extractable: true }),
  };
  const mock: RunningMock = await startMock({
    tokenTtlSeconds: ttlSeconds,
    clients: [{ ...client, authorizedScopes: [...client.authorizedScopes] }],
    publicUrls: { authUrl: options.authUrl, baseUrl: options.baseUrl },
    signingKey,
    clock,
  });
  const handler = createStageHandler({
    client,
    redactor,
    ledger: options.ledger,
    mock,
    budget: new ByteBudget(options.maxHeldBytes ?? defaultMaxHeldBytes),
    since,
    ttlNow: () => (since() < shortPhaseMs ? ttlSeconds : longTtlSeconds),
    tokenDelayMs: options.tokenDelayMs,
    apiDelayMs: options.apiDelayMs,
    draftOf: (body, issuedBy) =>
      tokenDraftOf(body, issuedBy, { startedAtEpoch, since, ttlSeconds, partnerId: client.partnerId }),
    recordBeforeAnswer: true,
  });
  let closing: Promise<void> | undefined;
  return {
    info: stageInfoOf({
      authUrl: options.authUrl,
      baseUrl: options.baseUrl,
      audience: mock.audience,
      partnerId: client.partnerId,
      authorizedScopes: client.authorizedScopes,
      ttlSeconds,
      longTtlSeconds,
      tokenDelayMs: options.tokenDelayMs,
      apiDelayMs: options.apiDelayMs,
    }),
    names: structuredClone(options.names ?? {}),
    handle: handler,
    redact: (text) => redactor.redact(text),
    close: () => {
      closing ??= mock.close();
      return closing;
    },
  };
}
