import type { IntegrationRecord, RunNames } from '../../common/report.js';
import { tool } from '../../version.js';
import type { ClientSession, DigestedPlan, JourneyRecord, StageInfo } from '../session.js';
import { fitSession } from '../session-bounds.js';
import type { LedgerContents } from './ledger.js';
import { shortPhaseLifetimes } from './scenarios.js';

/**
 * What a session says of its stage, from what the stage was given: the token URL is
 * `{authUrl}/oauth/token`, the audience the API's base URL, the short phase 3 short lifetimes.
 */
export function stageInfoOf(stage: {
  authUrl: string;
  baseUrl: string;
  audience?: string;
  partnerId: string;
  authorizedScopes: readonly string[];
  ttlSeconds: number;
  longTtlSeconds: number;
  tokenDelayMs: number;
  apiDelayMs: number;
}): StageInfo {
  return {
    authUrl: stage.authUrl,
    baseUrl: stage.baseUrl,
    tokenUrl: `${stage.authUrl}/oauth/token`,
    audience: stage.audience ?? stage.baseUrl,
    partnerId: stage.partnerId,
    authorizedScopes: [...stage.authorizedScopes],
    ttlSeconds: stage.ttlSeconds,
    longTtlSeconds: stage.longTtlSeconds,
    shortPhaseMs: shortPhaseLifetimes * stage.ttlSeconds * 1000,
    tokenDelayMs: stage.tokenDelayMs,
    apiDelayMs: stage.apiDelayMs,
  };
}

/**
 * The session file of a stage: what it was, what it recorded, and the journey — the journey's command
 * and any survivor redacted as every recorded value is (a secret passed on the command line included),
 * every value within the bounds a session file may hold (shortened visibly and counted in `clamped`),
 * so that the stage's own session always reads back for `--judge` and `verify`.
 */
export function assembleSession(parts: {
  stage: StageInfo;
  startedAtEpoch: number;
  durationMs: number;
  journey: JourneyRecord;
  contents: LedgerContents;
  maxExchanges: number;
  integration?: IntegrationRecord | undefined;
  /** The names the host passed in (partner, service) and the plan a certification run followed. */
  names?: Omit<RunNames, 'plan'> & { plan?: DigestedPlan };
  redact: (text: string) => string;
}): ClientSession {
  const names = parts.names ?? {};
  const { journey, contents, redact } = parts;
  return fitSession({
    kind: 'partner-conformance-client-session',
    sessionVersion: 2,
    tool,
    startedAt: new Date(parts.startedAtEpoch).toISOString(),
    durationMs: parts.durationMs,
    stage: { ...parts.stage, authorizedScopes: [...parts.stage.authorizedScopes] },
    scenarios: contents.scenarios,
    journey: {
      ...journey,
      command: journey.command.slice(0, 256).map((arg) => redact(arg).slice(0, 4000)),
      ...(journey.survivors && { survivors: journey.survivors.map(redact) }),
    },
    exchanges: contents.exchanges,
    tokens: contents.tokens,
    maxExchanges: parts.maxExchanges,
    dropped: contents.dropped,
    ...(parts.integration && { integration: { ...parts.integration } }),
    ...(names.partner && { partner: { id: names.partner.id, name: names.partner.name } }),
    ...(names.plan && { plan: structuredClone(names.plan) }),
    ...(names.service && { service: { url: names.service.url, version: names.service.version } }),
    ...(contents.outsideDropped !== undefined &&
      contents.outsideDropped > 0 && { outsideDropped: contents.outsideDropped }),
  });
}
