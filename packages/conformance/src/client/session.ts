import type { CertificationPlan, DigestedPlan } from '../common/certification-plan.js';
import type { JourneyRecord, ScenarioRecord } from '../common/records.js';
import type { IntegrationRecord, PartnerRecord, ServiceRecord, StageRecord } from '../common/report.js';
import { UsageError } from '../errors.js';
import { sessionSchema } from './session-schema.js';

export type { JourneyRecord, ScenarioName, ScenarioRecord } from '../common/records.js';

/**
 * The recorded session of a client-mode run: what the certification stage saw, already redacted, so
 * that it can be saved with the report and judged again offline (`--judge FILE`). Times are
 * milliseconds since the session started; no client secret and no whole token is ever in it.
 */
export interface ClientSession {
  kind: 'partner-conformance-client-session';
  sessionVersion: 2;
  tool: { name: string; version: string };
  /** ISO time the stage started recording. */
  startedAt: string;
  /** How long the stage recorded, in ms. */
  durationMs: number;
  stage: StageInfo;
  /** The scenario plan: what the stage was set to do, and when each step fired (if it did). */
  scenarios: ScenarioRecord[];
  journey: JourneyRecord;
  /** Every request the stage received, in arrival order (up to `maxExchanges`). */
  exchanges: RecordedExchange[];
  /** Tokens the stage issued, by reference (`T1`, `T2`, …): never the token itself. */
  tokens: IssuedToken[];
  /** The recording cap and how many exchanges arrived past it (not recorded). */
  maxExchanges: number;
  dropped: number;
  /**
   * How many recorded values the stage shortened to the bounds a session file may hold (a string
   * ends with "…[N chars]", a list with an item "…[N items]"): absent when none was.
   */
  clamped?: number;
  /** The integration certified, as named when the run started (`--partner`, `--integration-version`). */
  integration?: IntegrationRecord;
  /** The vendor's partner whose run this is, as the host (the certification service) names it. */
  partner?: PartnerRecord;
  /** The certification plan the run followed (a certification run only), with its digest. */
  plan?: DigestedPlan;
  /** The service that hosted the run. */
  service?: ServiceRecord;
  /** Exchanges from outside (none of the run's credentials or tokens) past the ones kept: counted only. */
  outsideDropped?: number;
}

export type { CertificationPlan, DigestedPlan };

/** The stage as the session records it: what a report names (StageRecord), and its token URL. */
export interface StageInfo extends StageRecord {
  tokenUrl: string;
}

export interface IssuedToken {
  ref: string;
  /** Exchange that issued it. */
  seq: number;
  /** When the answer left the stage (ms since start). */
  issuedAt: number;
  /** The JWT `exp`, as ms since start (whole seconds of epoch time, as real servers issue them). */
  expAt: number;
  /** `expires_in` of the answer, in seconds. */
  expiresIn: number;
  scope: string[];
  partnerId: string;
  /** Last 6 characters: the only form of a token any output shows. */
  last6: string;
  /** When the revocation scenario revoked it (ms since start). */
  revokedAt?: number;
  /** `short`: issued in the short phase (expiry is judged on these); `long`: after it (reuse is judged on these). */
  phase: 'short' | 'long';
}

/** The token-request form, as the stage read it (no secret: only whether it matched). */
export interface TokenForm {
  grantType?: string;
  /** The `scope` parameter as sent (undefined when absent). */
  scope?: string;
  audience?: string;
  resource: string[];
  /** How the client authenticated: form fields, HTTP Basic, both, or not at all. */
  clientAuth: 'body' | 'basic' | 'both' | 'none';
  clientIdMatches: boolean;
  secretMatches: boolean;
  /** A parameter sent more than once (RFC 6749 §3.2 forbids it). */
  repeated: string[];
}

export type BodyKind = 'none' | 'json-object' | 'json-other' | 'invalid-json' | 'form' | 'other';

export interface RecordedExchange {
  seq: number;
  server: 'auth' | 'api';
  /** When the request head arrived / when the answer was complete (ms since start). */
  at: number;
  end: number;
  method: string;
  /** The request target (path and query), redacted. */
  target: string;
  /** Request headers that matter, redacted: authorization, content-type, accept, idempotency-key. */
  requestHeaders: Record<string, string>;
  /** The Authorization header read: scheme, whether it is `Bearer <b64token>`, which stage token. */
  bearer?: { scheme: string; wellFormed: boolean; token?: string; unknownToken?: boolean };
  body: { bytes: number; sha256?: string; kind: BodyKind; text?: string };
  /** For requests to the token endpoint. */
  form?: TokenForm;
  /** Where a secret or a token was found where it must not be. */
  leaks: Leak[];
  /** 0 when no answer was sent (the client cut the connection). */
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: string;
  /** The OAuth / bearer error code of the answer, if any. */
  error?: string;
  /** The scenario step the stage played on this exchange instead of forwarding it. */
  injected?: 'revoked' | 'throttled' | 'unavailable';
  /** Reference of the token this exchange issued. */
  issued?: string;
  /**
   * The request carried none of the run's credentials or tokens (a token request whose client
   * authentication is not the run's client, an API call without a token this run issued): recorded
   * apart, shown, never judged.
   */
  outside?: true;
}

export type Leak =
  | 'secret-in-url'
  | 'secret-in-api-header'
  | 'secret-in-api-body'
  | 'token-in-url'
  | 'token-in-body'
  | 'client-id-in-url';

const fail = (message: string): never => {
  throw new UsageError(message);
};

/** The session file as the suite writes it: pretty JSON. */
export function formatSession(session: ClientSession): string {
  return `${JSON.stringify(session, null, 1)}\n`;
}

/**
 * Reads a session file written by `--save-session`; a clear error for anything else, so that a
 * reviewer never judges a file that is not one.
 */
export function parseSession(text: string, path = 'the session file'): ClientSession {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return fail(`${path} is not JSON (${(cause as Error).message}); pass a file written by --save-session`);
  }
  const session = value as Partial<ClientSession> | null;
  if (
    typeof session !== 'object' ||
    session === null ||
    session.kind !== 'partner-conformance-client-session'
  )
    return fail(
      `${path} is not a client session (no "kind": "partner-conformance-client-session"); pass a file written by --save-session`,
    );
  if (session.sessionVersion !== 2)
    return fail(
      `${path} has sessionVersion ${String(session.sessionVersion).slice(0, 20)}; this version of the suite reads sessionVersion 2 (record the journey again with this version)`,
    );
  const checked = sessionSchema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const where = issue.path
      .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
      .join('');
    return fail(
      `${path} does not match the session schema at ${where.replace(/^\./, '') || 'the top level'}: ${issue.message.slice(0, 200)}${checked.error.issues.length > 1 ? ` (and ${checked.error.issues.length - 1} more problems)` : ''}; the file is damaged or was edited`,
    );
  }
  return session as ClientSession;
}
