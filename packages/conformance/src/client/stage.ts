import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { scopes as allScopes } from '@partner-lending/spec';
import type { DigestedPlan } from '../common/certification-plan.js';
import { Redactor } from '../common/redact.js';
import type { IntegrationRecord, PartnerRecord, ServiceRecord } from '../common/report.js';
import type { ClientSession, JourneyRecord, ScenarioName } from './session.js';
import { maxSessionExchanges } from './session-schema.js';
import { assembleSession, stageInfoOf } from './stage/assemble.js';
import { createStageHandler } from './stage/handler.js';
import { memoryLedger } from './stage/ledger.js';
import { ByteBudget, defaultMaxHeldBytes } from './stage/request-reader.js';
import { defaultScopes, playScenarios, scenarioNames, shortPhaseLifetimes } from './stage/scenarios.js';
import { journeyEnv, newStageClient, type StageClient } from './stage/stage-client.js';
import { tokenDraftOf } from './stage/tokens.js';
import { hostOf, listenOn } from './stage/transport.js';

export {
  defaultScopes,
  grantsEveryScope,
  maxRenewalWindowSeconds,
  narrowedGrantScopes,
  phasesPlan,
  revocationCall,
  scenarioNames,
  scenarioPlans,
  shortPhaseLifetimes,
  throttleCall,
  throttleRetryAfterSeconds,
  unavailableRetryAfterSeconds,
} from './stage/scenarios.js';

/** Default lifetime of the short phase's tokens: its 15 s cross three lifetimes. */
export const defaultTtlSeconds = 5;
/**
 * Default lifetime of the long phase's tokens: far longer than any mainstream renewal window (10 to
 * 300 s ahead of expiry), so that a client that caches has no reason to ask again during a journey.
 */
export const defaultLongTtlSeconds = 3600;

/** Default delay of every token answer, so that concurrent token requests overlap visibly. */
export const defaultTokenDelayMs = 100;
/** Default delay before an API call is answered, so that concurrent calls overlap visibly. */
export const defaultApiDelayMs = 20;
/** Default cap of the recorded exchanges; past it exchanges are counted, not kept. */
export const defaultMaxExchanges = 50_000;
export interface StageOptions {
  /** Lifetime of the tokens of the short phase (the first 3 lifetimes), in seconds. Default 5. */
  ttlSeconds?: number;
  /** Lifetime of the tokens issued after the short phase, in seconds (more than 300 + the journey). Default 3600. */
  longTtlSeconds?: number;
  /** The grant of the stage's client under `narrowed-grant`. Default read:loans create:loan_draft. */
  scopes?: readonly string[];
  /** The scenario steps to play. Default all of `scenarioNames`. */
  scenarios?: readonly ScenarioName[];
  /** Interface to listen on. Default 127.0.0.1. */
  listen?: string;
  /** Origin (scheme and host, no port) the journey reaches the stage by, when not the listen address. */
  publicUrl?: string;
  /** Port of the partner API. Default 0 (random). */
  port?: number;
  /** Port of the token endpoint. Default 0 (random). */
  authPort?: number;
  /** A token answer leaves no sooner than this many ms after its request was read (its work runs meanwhile). Default 100. */
  tokenDelayMs?: number;
  /** Delay before every API call is answered, in ms. Default 20. */
  apiDelayMs?: number;
  /** Recorded exchanges at most. Default 50000. */
  maxExchanges?: number;
  /** Request-body bytes all requests being read may hold at once; past it a request gets 503. Default 64 MiB. */
  maxHeldBytes?: number;
  /** Epoch ms clock. Default Date.now. */
  clock?: () => number;
  /** The integration certified (`--partner`, `--integration-version`): kept in the session and the report. */
  integration?: IntegrationRecord;
  /**
   * A certification run's plan: its scopes, scenarios and lifetimes replace `scopes`, `scenarios`,
   * `ttlSeconds` and `longTtlSeconds`, and it is kept in the session. Default none (a practice run).
   */
  plan?: DigestedPlan;
  /** The vendor's partner whose run this is (a host names it): kept in the session and the report. */
  partner?: PartnerRecord;
  /** The service hosting the run: kept in the session and the report. */
  service?: ServiceRecord;
}

export type { StageClient };

export interface RunningStage {
  readonly authUrl: string;
  readonly baseUrl: string;
  readonly tokenUrl: string;
  readonly audience: string;
  readonly client: StageClient;
  /** Token lifetime of the short phase, of the long phase (s), and how long the short phase lasts (ms). */
  readonly ttlSeconds: number;
  readonly longTtlSeconds: number;
  readonly shortPhaseMs: number;
  /** Environment variables for the journey (secret included). */
  env(): Record<string, string>;
  /** The session so far; `journey` completes it. */
  session(journey: JourneyRecord): ClientSession;
  /** Number of exchanges received so far. */
  exchangeCount(): number;
  close(): Promise<void>;
}

/** What a stage plays, from its options and its plan: lifetimes, scenarios, grant, delays and its cap. */
interface StagePlay {
  ttlSeconds: number;
  longTtlSeconds: number;
  shortPhaseMs: number;
  enabled: Set<ScenarioName>;
  grant: string[];
  tokenDelayMs: number;
  apiDelayMs: number;
  maxExchanges: number;
}

/** The stage's two servers, listening, and the addresses the journey reaches them by. */
interface StageFronts {
  authFront: Server;
  apiFront: Server;
  authUrl: string;
  baseUrl: string;
}

/** Starts the certification stage: a strict token endpoint and partner API (the mock) behind a recorder. */
export async function startStage(options: StageOptions = {}): Promise<RunningStage> {
  const clock = options.clock ?? Date.now;
  const play = stagePlayOf(options);
  const { ttlSeconds, longTtlSeconds, shortPhaseMs } = play;
  const budget = new ByteBudget(options.maxHeldBytes ?? defaultMaxHeldBytes);
  const client = newStageClient(play.grant);
  const redactor = stageRedactor(client);
  const startedAtEpoch = clock();
  const since = () => clock() - startedAtEpoch;
  const ledger = memoryLedger({
    maxExchanges: play.maxExchanges,
    scenarios: playScenarios(play.enabled, play.grant),
  });
  const fronts = await openFronts(options);
  const { authFront, apiFront, authUrl, baseUrl } = fronts;
  const mock = await startStageMock(fronts, client, ttlSeconds, clock);
  const addresses = { authUrl, baseUrl, tokenUrl: `${authUrl}/oauth/token`, audience: mock.audience };
  const serve = createStageHandler({
    client,
    redactor,
    ledger,
    mock,
    budget,
    since,
    /** The lifetime of a token asked for now: short in the short phase, long after. */
    ttlNow: () => (since() < shortPhaseMs ? ttlSeconds : longTtlSeconds),
    tokenDelayMs: play.tokenDelayMs,
    apiDelayMs: play.apiDelayMs,
    draftOf: (body, issuedBy) =>
      tokenDraftOf(body, issuedBy, { startedAtEpoch, since, ttlSeconds, partnerId: client.partnerId }),
  });
  authFront.on('request', (req: IncomingMessage, res: ServerResponse) => void serve('auth', req, res));
  apiFront.on('request', (req: IncomingMessage, res: ServerResponse) => void serve('api', req, res));
  for (const server of [authFront, apiFront]) server.keepAliveTimeout = 5000;

  let closing: Promise<void> | undefined;
  return {
    ...addresses,
    client,
    ttlSeconds,
    longTtlSeconds,
    shortPhaseMs,
    env: () => journeyEnv(addresses, client),
    exchangeCount: () => ledger.count(),
    session: (journey) =>
      assembleSession({
        stage: stageInfoOf({
          ...addresses,
          ...play,
          partnerId: client.partnerId,
          authorizedScopes: client.authorizedScopes,
        }),
        startedAtEpoch,
        durationMs: since(),
        journey,
        contents: ledger.contents(),
        maxExchanges: play.maxExchanges,
        integration: options.integration,
        names: {
          ...(options.partner && { partner: options.partner }),
          ...(options.plan && { plan: options.plan }),
          ...(options.service && { service: options.service }),
        },
        redact: (text) => redactor.redact(text),
      }),
    close: () => {
      closing ??= Promise.all([closeFront(authFront), closeFront(apiFront), mock.close()]).then(() => {});
      return closing;
    },
  };
}

/** What the stage plays: a certification run's plan wins over the options, the defaults fill the rest. */
function stagePlayOf(options: StageOptions): StagePlay {
  const { plan } = options;
  const ttlSeconds = plan?.ttlSeconds ?? options.ttlSeconds ?? defaultTtlSeconds;
  const enabled = new Set(plan?.scenarios ?? options.scenarios ?? scenarioNames);
  return {
    ttlSeconds,
    longTtlSeconds: plan?.longTtlSeconds ?? options.longTtlSeconds ?? defaultLongTtlSeconds,
    shortPhaseMs: shortPhaseLifetimes * ttlSeconds * 1000,
    enabled,
    grant: plan
      ? [...plan.scopes]
      : enabled.has('narrowed-grant')
        ? [...(options.scopes ?? defaultScopes)]
        : [...allScopes],
    tokenDelayMs: options.tokenDelayMs ?? defaultTokenDelayMs,
    apiDelayMs: options.apiDelayMs ?? defaultApiDelayMs,
    // Never more than a session file may hold: the stage's own sessions always pass --judge.
    maxExchanges: Math.min(options.maxExchanges ?? defaultMaxExchanges, maxSessionExchanges),
  };
}

/** A redactor that knows the stage client's id and secret, alone and as HTTP Basic credentials. */
function stageRedactor(client: StageClient): Redactor {
  const redactor = new Redactor();
  redactor.addSecret(client.clientSecret, '[client_secret]');
  redactor.addSecret(client.clientId, '[client_id]');
  redactor.addBasicCredentials(client.clientId, client.clientSecret, '[client_credentials]');
  return redactor;
}

/** The token endpoint's and the partner API's servers, listening (neither left open when one fails). */
async function openFronts(options: StageOptions): Promise<StageFronts> {
  const listen = options.listen ?? '127.0.0.1';
  const authFront = createServer();
  const apiFront = createServer();
  const authPort = await listenOn(authFront, listen, options.authPort ?? 0, 'the token endpoint');
  let apiPort: number;
  try {
    apiPort = await listenOn(apiFront, listen, options.port ?? 0, 'the partner API');
  } catch (error) {
    authFront.close();
    throw error;
  }
  const publicHost =
    options.publicUrl ?? `http://${hostOf(listen === '0.0.0.0' || listen === '::' ? '127.0.0.1' : listen)}`;
  return { authFront, apiFront, authUrl: `${publicHost}:${authPort}`, baseUrl: `${publicHost}:${apiPort}` };
}

/** The mock behind the stage's fronts, answering at their addresses (the fronts closed when it fails). */
async function startStageMock(
  fronts: StageFronts,
  client: StageClient,
  ttlSeconds: number,
  clock: () => number,
): Promise<RunningMock> {
  try {
    return await startMock({
      tokenTtlSeconds: ttlSeconds,
      clients: [client],
      publicUrls: { authUrl: fronts.authUrl, baseUrl: fronts.baseUrl },
      clock,
    });
  } catch (error) {
    fronts.authFront.close();
    fronts.apiFront.close();
    throw error;
  }
}

/** Closes a server and every connection it holds. */
const closeFront = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
