import type { RunningMock } from '@partner-lending/mock';
import { toCheckResult } from '../common/check-meta.js';
import { Redactor, Secret } from '../common/redact.js';
import {
  type CheckResult,
  mustNotVerified,
  type Report,
  runEnvironment,
  summarize,
} from '../common/report.js';
import { createOperationOf, specSha256 } from '../common/spec-responses.js';
import { type ConformanceError, UsageError } from '../errors.js';
import { tool } from '../version.js';
import { checks as catalogue } from './checks/index.js';
import { CheckContext, isSuccess } from './context.js';
import { type Exchange, HttpProbe, type ProbeRequest } from './http/probe.js';
import {
  type CheckedOptions,
  type ConformanceOptions,
  checkRunOptions,
  checkUrl,
  type TargetInfo,
} from './options.js';
import { preflight } from './preflight.js';
import { runChecks } from './runner.js';
import type { CheckSettings, Target } from './target.js';

export type { ConformanceOptions, TargetInfo };

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

function observedProfile(context: CheckContext): string {
  const { jwt, body } = context.main;
  if (!jwt) return 'opaque token';
  const aud = Array.isArray(jwt.payload.aud) ? 'aud array' : 'aud string';
  const scope = Array.isArray(jwt.payload.scope) ? 'scope array' : 'scope string';
  const typ = typeof jwt.header.typ === 'string' ? `typ ${jwt.header.typ}` : 'no typ';
  const tokenType = `token_type ${String(body?.token_type)}`;
  return `${typ}, ${aud}, ${scope}, ${tokenType}`;
}

/** The target a run tests, the embedded mock when it runs one, and what the checks read. */
interface OpenedTarget {
  target: Target;
  /** `remote`, or the embedded mock with its profile and faults. */
  kind: string;
  mock?: RunningMock;
  settings: CheckSettings;
}

/** What a run's checks share (the context), and the create calls that went through. */
interface RunContext {
  context: CheckContext;
  /** The create calls that succeeded (`METHOD path → status`), redacted. */
  mayHaveCreated: Set<string>;
}

/**
 * Runs the suite and returns the report and what was learned about the target. Throws ConformanceError:
 * ERR_USAGE for bad options, ERR_UNREACHABLE / ERR_CREDENTIALS / ERR_PREFLIGHT when the preflight fails.
 */
export async function runConformanceDetailed(options: ConformanceOptions = {}): Promise<ConformanceRun> {
  const startedAt = new Date(options.clock?.now() ?? Date.now());
  const started = performance.now();
  const checked = checkRunOptions(options);
  const opened = checked.remote
    ? remoteTarget(options, checked.maxExpiryWaitSeconds)
    : await embeddedTarget(options, checked.maxExpiryWaitSeconds);
  let contextToClose: CheckContext | undefined;
  try {
    const run = runContext(options, opened);
    contextToClose = run.context;
    await preflight(run.context);
    const info: TargetInfo = {
      authUrl: opened.target.authUrl,
      baseUrl: opened.target.baseUrl,
      audience: opened.target.audience,
      kind: opened.kind,
      profile: observedProfile(run.context),
      notes: [...run.context.preflightNotes],
      checks: [...checked.run, ...checked.skipped],
    };
    options.onTarget?.(info);
    const results = await runSelected(options, checked, run.context);
    const report: Report = {
      schemaVersion: 3,
      tool: { name: tool.name, version: tool.version },
      mode: 'server',
      certify: options.certify === true,
      target: { authUrl: info.authUrl, baseUrl: info.baseUrl, audience: info.audience },
      spec: { sha256: specSha256 },
      writes: { allowed: opened.settings.allowWrites, mayHaveCreated: [...run.mayHaveCreated] },
      startedAt: startedAt.toISOString(),
      durationMs: Math.round(performance.now() - started),
      environment: runEnvironment(),
      summary: summarize(results),
      notVerified: mustNotVerified(results),
      checks: results,
    };
    return { report, target: info };
  } finally {
    await contextToClose?.close();
    await opened.mock?.close();
  }
}

/** What the checks read, as the options give it (the embedded mock fills in what they leave out). */
function settingsOf(options: ConformanceOptions, maxExpiryWaitSeconds: number): CheckSettings {
  return {
    allowWrites: options.allowWrites ?? false,
    expectScopes: options.expectScopes,
    maxExpiryWaitSeconds,
    foreignPartnerId: options.otherPartnerId,
    otherClient:
      options.otherClientId && options.otherClientSecret
        ? { clientId: new Secret(options.otherClientId), clientSecret: new Secret(options.otherClientSecret) }
        : undefined,
    listen: options.listen,
    jwksUrl: options.jwksUrl,
    otherAudience: options.otherAudience,
  };
}

/** A target given by its addresses and client credentials (the addresses checked first). */
function remoteTarget(options: ConformanceOptions, maxExpiryWaitSeconds: number): OpenedTarget {
  const authUrl = checkUrl('--auth-url', options.authUrl!);
  const baseUrl = checkUrl('--base-url', options.baseUrl!);
  return {
    target: {
      authUrl,
      baseUrl,
      audience: options.audience ?? baseUrl,
      tokenUrl: new URL('oauth/token', authUrl.endsWith('/') ? authUrl : `${authUrl}/`).toString(),
      clientId: new Secret(options.clientId!),
      clientSecret: new Secret(options.clientSecret!),
    },
    kind: 'remote',
    settings: settingsOf(options, maxExpiryWaitSeconds),
  };
}

/**
 * The embedded mock, started for this run: its first client is tested, its second partner's client
 * (unless the options name another partner) proves isolation, its key set and second audience are known.
 */
async function embeddedTarget(
  options: ConformanceOptions,
  maxExpiryWaitSeconds: number,
): Promise<OpenedTarget> {
  const { startMock } = await import('@partner-lending/mock');
  let mock: RunningMock;
  try {
    mock = await startMock({ otherAudiences: [embeddedOtherAudience], ...options.mock });
  } catch (cause) {
    // A bad fault name or mock option is a usage error of the caller, not a failure of the target.
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new UsageError(`the embedded mock did not start: ${message}`, { cause });
  }
  const client = mock.clients[0]!;
  const given = settingsOf(options, maxExpiryWaitSeconds);
  const other = mock.clients.find((item) => item.partnerId !== client.partnerId);
  return {
    target: {
      authUrl: mock.authUrl,
      baseUrl: mock.baseUrl,
      audience: options.audience ?? mock.audience,
      tokenUrl: mock.tokenUrl,
      clientId: new Secret(client.clientId),
      clientSecret: new Secret(client.clientSecret),
    },
    kind: `embedded mock (${mock.profile}${mock.faults.length > 0 ? `; faults: ${mock.faults.join(', ')}` : ''})`,
    mock,
    settings: {
      ...given,
      expectScopes: given.expectScopes ?? client.authorizedScopes,
      otherClient:
        other && !given.foreignPartnerId && !given.otherClient
          ? { clientId: new Secret(other.clientId), clientSecret: new Secret(other.clientSecret) }
          : given.otherClient,
      jwksUrl: given.jwksUrl ?? mock.jwksUrl,
      otherAudience:
        given.otherAudience ??
        (options.mock?.otherAudiences === undefined ? embeddedOtherAudience : options.mock.otherAudiences[0]),
    },
  };
}

/**
 * What the checks share: a redactor that knows every credential, the probe (its write guard, and each
 * exchange kept and each successful create call noted) and the context over them.
 */
function runContext(options: ConformanceOptions, { target, settings }: OpenedTarget): RunContext {
  const redactor = new Redactor();
  redactor.addSecret(target.clientSecret.reveal(), '$PARTNER_CLIENT_SECRET');
  redactor.addSecret(target.clientId.reveal(), '$PARTNER_CLIENT_ID');
  if (settings.otherClient) {
    redactor.addSecret(settings.otherClient.clientSecret.reveal(), '$PARTNER_OTHER_CLIENT_SECRET');
    redactor.addSecret(settings.otherClient.clientId.reveal(), '$PARTNER_OTHER_CLIENT_ID');
  }
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
    guard: writeGuard(target, settings.allowWrites),
  });
  const context = new CheckContext({
    target,
    settings,
    probe,
    redactor,
    exchanges,
    now: () => options.clock?.now() ?? Date.now(),
    sleep,
  });
  return { context, mayHaveCreated };
}

/** Runs the selected checks (the skipped ones reported first) and returns every result in catalogue order. */
async function runSelected(
  options: ConformanceOptions,
  { run, skipped }: CheckedOptions,
  context: CheckContext,
): Promise<CheckResult[]> {
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
  return [...results, ...skippedResults].sort((a, b) => order.get(a.id)! - order.get(b.id)!);
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
