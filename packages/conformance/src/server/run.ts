import type { MockOptions, RunningMock } from '@partner-lending/mock';
import { isScope } from '@partner-lending/spec';
import { toCheckResult } from '../common/check-meta.js';
import { isLoopbackHost } from '../common/loopback.js';
import { Redactor, Secret } from '../common/redact.js';
import {
  type CheckResult,
  mustNotVerified,
  type Report,
  runEnvironment,
  summarize,
} from '../common/report.js';
import { createOperationOf, specSha256 } from '../common/spec-responses.js';
import { ConformanceError, usageError } from '../errors.js';
import { tool } from '../version.js';
import type { Check } from './check.js';
import { checks as catalogue, checkIds } from './checks/index.js';
import { CheckContext, isSuccess, type Target } from './context.js';
import { type Exchange, HttpProbe, type ProbeRequest } from './http/probe.js';
import { preflight } from './preflight.js';
import { runChecks } from './runner.js';

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

export interface ConformanceRun {
  report: Report;
  target: TargetInfo;
}

/** The second API the embedded mock's auth server also issues tokens for (its own API refuses them). */
export const embeddedOtherAudience = 'https://second-api.partner-lending.invalid';

/**
 * The probe's write guard: without --allow-writes, a request with a body (JSON, form or raw) to a create
 * endpoint — of any partner — is never sent; the probe throws ERR_WRITE_GUARD instead.
 */
export function writeGuard(
  target: { tokenUrl: string; baseUrl: string },
  allowWrites: boolean,
): (request: ProbeRequest) => string | undefined {
  return (request) => {
    if (allowWrites) return undefined;
    const id = createOperationOf(request, target);
    const hasBody = request.form !== undefined || request.json !== undefined || request.body !== undefined;
    return id && hasBody
      ? `refused to send ${request.method} ${new URL(request.url).pathname} with a body: create endpoints get no body without --allow-writes`
      : undefined;
  };
}

function checkUrl(name: string, value: string): string {
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

function observedProfile(context: CheckContext): string {
  const { jwt, body } = context.main;
  if (!jwt) return 'opaque token';
  const aud = Array.isArray(jwt.payload.aud) ? 'aud array' : 'aud string';
  const scope = Array.isArray(jwt.payload.scope) ? 'scope array' : 'scope string';
  const typ = typeof jwt.header.typ === 'string' ? `typ ${jwt.header.typ}` : 'no typ';
  const tokenType = `token_type ${String(body?.token_type)}`;
  return `${typ}, ${aud}, ${scope}, ${tokenType}`;
}

/**
 * Runs the suite and returns the report and what was learned about the target. Throws ConformanceError:
 * ERR_USAGE for bad options, ERR_UNREACHABLE / ERR_CREDENTIALS / ERR_PREFLIGHT when the preflight fails.
 */
export async function runConformanceDetailed(options: ConformanceOptions = {}): Promise<ConformanceRun> {
  const startedAt = new Date(options.clock?.now() ?? Date.now());
  const started = performance.now();
  const maxExpiryWaitSeconds = options.maxExpiryWaitSeconds ?? 20;
  if (!Number.isFinite(maxExpiryWaitSeconds) || maxExpiryWaitSeconds < 0)
    throw usageError(`--max-expiry-wait must be a number of seconds ≥ 0, got ${maxExpiryWaitSeconds}`);
  if (options.audience !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(options.audience);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
      throw usageError(
        `--audience is not an http(s) URL: ${JSON.stringify(options.audience)}. Expected the base address of the partner API, e.g. https://api.example.com (API documentation §2.1: the audience identifies the API).`,
      );
    if (parsed.username !== '' || parsed.password !== '')
      throw usageError('--audience contains credentials (user:password@); give the address without them');
  }
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

  let mock: RunningMock | undefined;
  let otherAudience = options.otherAudience;
  if (otherAudience !== undefined && (otherAudience.trim() === '' || /\s/.test(otherAudience)))
    throw usageError(
      `--other-audience must be an audience identifier (e.g. https://other-api.example), got ${JSON.stringify(otherAudience)}`,
    );
  let target: Target;
  let expectScopes = options.expectScopes;
  const foreignPartnerId = options.otherPartnerId;
  let otherClient =
    options.otherClientId && options.otherClientSecret
      ? { clientId: new Secret(options.otherClientId), clientSecret: new Secret(options.otherClientSecret) }
      : undefined;
  if ((options.otherClientId ? 1 : 0) + (options.otherClientSecret ? 1 : 0) === 1)
    throw usageError(
      "PARTNER_OTHER_CLIENT_ID and PARTNER_OTHER_CLIENT_SECRET go together: set both (a second partner's client) or neither.",
    );
  let jwksUrl = options.jwksUrl;
  let kind: string;
  if (remote) {
    const authUrl = checkUrl('--auth-url', options.authUrl!);
    const baseUrl = checkUrl('--base-url', options.baseUrl!);
    target = {
      authUrl,
      baseUrl,
      audience: options.audience ?? baseUrl,
      tokenUrl: new URL('oauth/token', authUrl.endsWith('/') ? authUrl : `${authUrl}/`).toString(),
      clientId: new Secret(options.clientId!),
      clientSecret: new Secret(options.clientSecret!),
    };
    kind = 'remote';
  } else {
    const { startMock } = await import('@partner-lending/mock');
    try {
      mock = await startMock({ otherAudiences: [embeddedOtherAudience], ...options.mock });
    } catch (cause) {
      // A bad fault name or mock option is a usage error of the caller, not a failure of the target.
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new ConformanceError('ERR_USAGE', `the embedded mock did not start: ${message}`, { cause });
    }
    const client = mock.clients[0]!;
    target = {
      authUrl: mock.authUrl,
      baseUrl: mock.baseUrl,
      audience: options.audience ?? mock.audience,
      tokenUrl: mock.tokenUrl,
      clientId: new Secret(client.clientId),
      clientSecret: new Secret(client.clientSecret),
    };
    expectScopes ??= client.authorizedScopes;
    const other = mock.clients.find((item) => item.partnerId !== client.partnerId);
    if (other && !foreignPartnerId && !otherClient)
      otherClient = { clientId: new Secret(other.clientId), clientSecret: new Secret(other.clientSecret) };
    jwksUrl ??= mock.jwksUrl;
    otherAudience ??=
      options.mock?.otherAudiences === undefined ? embeddedOtherAudience : options.mock.otherAudiences[0];
    kind = `embedded mock (${mock.profile}${mock.faults.length > 0 ? `; faults: ${mock.faults.join(', ')}` : ''})`;
  }
  let contextToClose: CheckContext | undefined;
  try {
    const redactor = new Redactor();
    redactor.addSecret(target.clientSecret.reveal(), '$PARTNER_CLIENT_SECRET');
    redactor.addSecret(target.clientId.reveal(), '$PARTNER_CLIENT_ID');
    if (otherClient) {
      redactor.addSecret(otherClient.clientSecret.reveal(), '$PARTNER_OTHER_CLIENT_SECRET');
      redactor.addSecret(otherClient.clientId.reveal(), '$PARTNER_OTHER_CLIENT_ID');
    }
    const allowWrites = options.allowWrites ?? false;
    const mayHaveCreated = new Set<string>();
    const exchanges: Exchange[] = [];
    const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    const probe = new HttpProbe({
      ...(options.fetch ? { fetch: options.fetch } : {}),
      sleep,
      requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
      onExchange: (exchange) => {
        exchanges.push(exchange);
        const id = createOperationOf(exchange.request, target);
        if (id && isSuccess(exchange))
          mayHaveCreated.add(
            `${exchange.request.method} ${redactor.redact(new URL(exchange.request.url).pathname)} → ${exchange.status}`,
          );
      },
      // No write without --allow-writes, by construction: a body to a create endpoint is never sent.
      guard: writeGuard(target, allowWrites),
    });
    const context = new CheckContext({
      target,
      settings: {
        allowWrites,
        expectScopes,
        maxExpiryWaitSeconds,
        foreignPartnerId,
        otherClient,
        listen: options.listen,
        jwksUrl,
        otherAudience,
      },
      probe,
      redactor,
      exchanges,
      now: () => options.clock?.now() ?? Date.now(),
      sleep,
    });
    contextToClose = context;
    await preflight(context);
    const info: TargetInfo = {
      authUrl: target.authUrl,
      baseUrl: target.baseUrl,
      audience: target.audience,
      kind,
      profile: observedProfile(context),
      notes: [...context.preflightNotes],
      checks: [...run, ...skipped],
    };
    options.onTarget?.(info);
    const skippedResults: CheckResult[] = skipped.map((check) =>
      toCheckResult(
        check,
        { status: 'skipped', details: 'not verified: skipped by --skip' },
        { listed: [], omitted: 0 },
        0,
      ),
    );
    for (const result of skippedResults) options.onCheckResult?.(result);
    const results = await runChecks(run, context, {
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      ...(options.onCheckStart ? { onStart: options.onCheckStart } : {}),
      ...(options.onCheckResult ? { onResult: options.onCheckResult } : {}),
    });
    const order = new Map(catalogue.map((check, index) => [check.id, index]));
    const all = [...results, ...skippedResults].sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    const report: Report = {
      schemaVersion: 3,
      tool: { name: tool.name, version: tool.version },
      mode: 'server',
      certify: options.certify === true,
      target: { authUrl: target.authUrl, baseUrl: target.baseUrl, audience: target.audience },
      spec: { sha256: specSha256 },
      writes: { allowed: allowWrites, mayHaveCreated: [...mayHaveCreated] },
      startedAt: startedAt.toISOString(),
      durationMs: Math.round(performance.now() - started),
      environment: runEnvironment(),
      summary: summarize(all),
      notVerified: mustNotVerified(all),
      checks: all,
    };
    return { report, target: info };
  } finally {
    await contextToClose?.close();
    await mock?.close();
  }
}

/** Runs the suite against a target (or the embedded mock) and returns the JSON report of the contract. */
export async function runConformance(options: ConformanceOptions = {}): Promise<Report> {
  return (await runConformanceDetailed(options)).report;
}

/**
 * The run that stopped before any check (the preflight refused the target): a report with no check
 * and `stopped` saying why, so that the reports asked for still say what happened.
 */
export function stoppedRun(
  options: ConformanceOptions,
  error: ConformanceError,
  startedAt: Date,
): ConformanceRun {
  const target = {
    authUrl: options.authUrl ?? '',
    baseUrl: options.baseUrl ?? '',
    audience: options.audience ?? options.baseUrl ?? '',
  };
  return {
    report: {
      schemaVersion: 3,
      tool: { name: tool.name, version: tool.version },
      mode: 'server',
      certify: options.certify === true,
      target,
      spec: { sha256: specSha256 },
      writes: { allowed: options.allowWrites === true, mayHaveCreated: [] },
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      environment: runEnvironment(),
      summary: { passed: 0, failed: 0, skipped: 0, errored: 0 },
      notVerified: [],
      stopped: { code: error.code, reason: error.message },
      checks: [],
    },
    target: {
      ...target,
      kind: options.baseUrl ? 'remote' : 'embedded mock',
      profile: 'not observed',
      checks: [],
    },
  };
}
