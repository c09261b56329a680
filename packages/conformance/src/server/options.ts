import type { MockOptions } from '@partner-lending/mock';
import { isScope } from '@partner-lending/spec';
import { isLoopbackHost } from '../common/loopback.js';
import type { CheckResult } from '../common/report.js';
import { usageError } from '../errors.js';
import type { Check } from './check.js';
import { checks as catalogue, checkIds } from './checks/index.js';

/** Options of {@link runConformance}. `undefined` counts as absent, so `process.env.X` can be passed as is. */
export interface ConformanceOptions {
  /** Address of the authentication service; with `baseUrl`, tests that target instead of the embedded mock. */
  authUrl?: string | undefined;
  /** Address of the partner API (also the default audience). */
  baseUrl?: string | undefined;
  /** The audience to ask for. Default: `baseUrl`. */
  audience?: string | undefined;
  /** Client credentials for a remote target (the CLI reads PARTNER_CLIENT_ID / PARTNER_CLIENT_SECRET). */
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  /** Options of the embedded mock, when no target is given (profile, faults, clients…). */
  mock?: MockOptions;
  /**
   * An audience the token endpoint issues tokens for, for this client, that is not the partner API (a
   * second API, or one registered for certification): `audience-foreign` proves with it that the API
   * refuses a token made for another audience. The embedded mock serves one (`embeddedOtherAudience`).
   */
  otherAudience?: string;
  /** The scopes the partner console says the client has; compared with what is granted. */
  expectScopes?: readonly string[] | undefined;
  /** Let the positive controls call the create endpoints with a valid token (they write). Default false. */
  allowWrites?: boolean;
  /** Longest real wait for a token to expire, in seconds. Default 20. */
  maxExpiryWaitSeconds?: number;
  /** Run only these check ids. */
  only?: readonly string[];
  /** Skip these check ids (reported as skipped). */
  skip?: readonly string[];
  /** Checks run at once. Default 8. */
  concurrency?: number;
  /** Time limit of each request in ms. Default 10000. */
  requestTimeoutMs?: number;
  /**
   * A real second partner's id for partner-isolation (the CLI's --other-partner-id). Default: the
   * partnerId of `otherClientId`'s token, else the embedded mock's second partner; none on a remote
   * target, and then partner-isolation is skipped as not verified.
   */
  otherPartnerId?: string | undefined;
  /** A second partner's client credentials (the CLI reads PARTNER_OTHER_CLIENT_ID / PARTNER_OTHER_CLIENT_SECRET). */
  otherClientId?: string | undefined;
  otherClientSecret?: string | undefined;
  /** Certification mode: a skipped `must` check fails the run (exit 1). Default false. */
  certify?: boolean;
  /**
   * A host name or address of this machine that the target can reach: the suite's own issuer (for
   * integrity-foreign-issuer and integrity-jku) listens there. Default: loopback, which only a target on
   * this machine reaches; against another target those checks are skipped as not verified.
   */
  listen?: string | undefined;
  /** The auth server's JWKS URL. Default: discovered (metadata, then /.well-known/jwks.json). */
  jwksUrl?: string | undefined;
  fetch?: typeof globalThis.fetch;
  /** Wall clock (epoch ms) and sleep, for the expiry check. */
  clock?: { now(): number };
  sleep?: (ms: number) => Promise<void>;
  /** Called once the target is known (after the embedded mock started and the preflight passed). */
  onTarget?: (target: TargetInfo) => void;
  onCheckStart?: (check: Pick<Check, 'id' | 'title' | 'category' | 'severity'>) => void;
  onCheckResult?: (result: CheckResult) => void;
}

/** What the reports say about the target besides the JSON contract. */
export interface TargetInfo {
  authUrl: string;
  baseUrl: string;
  audience: string;
  /** `embedded mock (deployed)` or `remote`. */
  kind: string;
  /** The token profile observed: deployed-like (arrays, lowercase bearer) or RFC 9068. */
  profile: string;
  /** What the preflight had to work around (a refused all-scopes ask, the `resource` parameter…). */
  notes?: string[];
  checks: ReadonlyArray<Pick<Check, 'id' | 'category'>>;
}

/** A run's options once checked: what it waits at most, the checks it runs and skips, and where. */
export interface CheckedOptions {
  maxExpiryWaitSeconds: number;
  run: Check[];
  skipped: Check[];
  /** A target was given (`authUrl` and `baseUrl`); false: the embedded mock. */
  remote: boolean;
}

/**
 * Checks a run's options before anything starts, in the order a user reads them: every refusal is a
 * ConformanceError ERR_USAGE saying what was given, what is expected and what to do.
 */
export function checkRunOptions(options: ConformanceOptions): CheckedOptions {
  const maxExpiryWaitSeconds = options.maxExpiryWaitSeconds ?? 20;
  if (!Number.isFinite(maxExpiryWaitSeconds) || maxExpiryWaitSeconds < 0)
    throw usageError(`--max-expiry-wait must be a number of seconds ≥ 0, got ${maxExpiryWaitSeconds}`);
  if (options.audience !== undefined) checkAudience(options.audience);
  const unknownScopes = (options.expectScopes ?? []).filter((scope) => !isScope(scope));
  if (unknownScopes.length > 0)
    throw usageError(
      `--expect-scopes: unknown scope ${unknownScopes.join(', ')}. Known: read:loans, create:loan_draft, create:journal_update, create:repayment.`,
    );
  const { run, skipped } = selectChecks(options);
  const remote = options.authUrl !== undefined || options.baseUrl !== undefined;
  if (remote && (options.authUrl === undefined || options.baseUrl === undefined))
    throw usageError(
      '--auth-url and --base-url go together: give both to test a target, or neither to test the embedded mock.',
    );
  if (remote && (!options.clientId || !options.clientSecret))
    throw usageError(
      'PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET must be set to test a target (secrets are never flags).',
    );
  const { otherAudience } = options;
  if (otherAudience !== undefined && (otherAudience.trim() === '' || /\s/.test(otherAudience)))
    throw usageError(
      `--other-audience must be an audience identifier (e.g. https://other-api.example), got ${JSON.stringify(otherAudience)}`,
    );
  if ((options.otherClientId ? 1 : 0) + (options.otherClientSecret ? 1 : 0) === 1)
    throw usageError(
      "PARTNER_OTHER_CLIENT_ID and PARTNER_OTHER_CLIENT_SECRET go together: set both (a second partner's client) or neither.",
    );
  return { maxExpiryWaitSeconds, run, skipped, remote };
}

/** The audience asked for is the partner API's address: an http(s) URL without credentials. */
function checkAudience(audience: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(audience);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
    throw usageError(
      `--audience is not an http(s) URL: ${JSON.stringify(audience)}. Expected the base address of the partner API, e.g. https://api.example.com (API documentation §2.1: the audience identifies the API).`,
    );
  if (parsed.username !== '' || parsed.password !== '')
    throw usageError('--audience contains credentials (user:password@); give the address without them');
}

/** A target's address: an http(s) URL without credentials, plain http only to loopback. */
export function checkUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(
      `${name} is not a URL: ${JSON.stringify(value)}. Expected e.g. https://auth.example.com.`,
    );
  }
  if (url.username !== '' || url.password !== '')
    throw usageError(
      `${name} contains credentials (user:password@); give the address without them and the client credentials in PARTNER_CLIENT_ID / PARTNER_CLIENT_SECRET`,
    );
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw usageError(`${name} must be an http(s) URL, got ${url.protocol}`);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw usageError(
      `${name} uses plain http to ${url.hostname}: the client secret would travel unencrypted. Use https (http is allowed for loopback only).`,
    );
  return value;
}

/** The checks `only` and `skip` select: those to run and those reported as skipped. */
function selectChecks(options: ConformanceOptions): { run: Check[]; skipped: Check[] } {
  for (const [name, ids] of [
    ['only', options.only],
    ['skip', options.skip],
  ] as const) {
    const unknown = (ids ?? []).filter((id) => !checkIds.includes(id));
    if (unknown.length > 0)
      throw usageError(
        `--${name}: unknown check id ${unknown.join(', ')}. Known ids: ${checkIds.join(', ')}.`,
      );
  }
  const only = options.only && options.only.length > 0 ? new Set(options.only) : undefined;
  const skip = new Set(options.skip ?? []);
  const selected = catalogue.filter((check) => !only || only.has(check.id));
  if (selected.every((check) => skip.has(check.id)))
    throw usageError(
      `--only and --skip together select no check to run (${[...(only ?? [])].join(', ') || 'all'} minus ${[...skip].join(', ')}); a run that checks nothing cannot pass. Remove the ids from --skip or widen --only.`,
    );
  return {
    run: selected.filter((check) => !skip.has(check.id)),
    skipped: selected.filter((check) => skip.has(check.id)),
  };
}
