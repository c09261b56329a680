import { isLoopbackHost } from '@partner-lending/auth';
import { ConfigurationError } from './errors.js';

/** The environment variables of the toolkit, by option. */
export const environmentVariables = {
  authUrl: 'PARTNER_AUTH_URL',
  baseUrl: 'PARTNER_BASE_URL',
  audience: 'PARTNER_AUDIENCE',
  clientId: 'PARTNER_CLIENT_ID',
  clientSecret: 'PARTNER_CLIENT_SECRET',
} as const;

export const defaults = { timeoutMs: 30_000, maxRetries: 2 } as const;

export interface ConnectionOptions {
  environment?: 'staging' | 'production' | undefined;
  authUrl?: string | undefined;
  baseUrl?: string | undefined;
  audience?: string | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
  /**
   * Sends the access token (and, for the auth URL, the client secret) over plain http to a
   * non-loopback host.
   * @deprecated SECURITY WARNING: the credentials and tokens travel unencrypted and can be read or
   * replayed by anyone on the network path. Only for throw-away test set-ups; never in production.
   */
  dangerouslyAllowInsecureHttp?: boolean | undefined;
}

export interface ResolvedConnection {
  environment: 'staging' | 'production';
  /** The auth server; undefined only when a token provider is supplied instead. */
  authUrl: URL | undefined;
  baseUrl: URL;
  audience: string;
  clientId: string | undefined;
  clientSecret: string | undefined;
  timeoutMs: number;
  maxRetries: number;
}

type Env = Readonly<Record<string, string | undefined>>;

const describeOption = {
  authUrl: 'the authentication service address, e.g. https://auth.partner.example',
  baseUrl: 'the partner API address, e.g. https://partner-api.example',
  audience: 'the partner API the tokens are for, normally the base URL',
  clientId: 'the client id from the partner administration console',
  clientSecret: 'the client secret from the partner administration console',
} as const;

/** A URL for messages: never its userinfo. */
function shown(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

/**
 * Resolves each option from `options`, else from its `PARTNER_*` variable. Errors name both, and
 * every missing value at once. `withCredentials: false` when the caller brings its own token provider.
 */
export function resolveConnection(
  options: ConnectionOptions,
  env: Env,
  withCredentials = true,
): ResolvedConnection {
  const environment = options.environment ?? 'staging';
  if (environment !== 'staging' && environment !== 'production') {
    throw new ConfigurationError(
      `environment must be 'staging' or 'production', got ${JSON.stringify(String(environment)).slice(0, 60)}.`,
    );
  }
  const production = environment === 'production';
  if (production) {
    // Production addresses are never taken from the variables: those may be a staging set-up's.
    const absent = (['authUrl', 'baseUrl'] as const).filter(
      (name) => options[name] === undefined || options[name] === '',
    );
    if (absent.length > 0) {
      throw new ConfigurationError(
        `environment 'production' needs ${absent.join(' and ')} passed to createPartnerClient({ environment: 'production', authUrl, baseUrl, … }): the production addresses your onboarding gave you. ${absent
          .map((name) => environmentVariables[name])
          .join(
            ' and ',
          )} ${absent.length === 1 ? 'is' : 'are'} not read in production, so that a staging value can never be used there.`,
      );
    }
  }
  const missing: string[] = [];
  const pick = (name: keyof typeof environmentVariables, required: boolean) => {
    const given = options[name];
    const variable = environmentVariables[name];
    const fromEnv = production && name !== 'clientId' && name !== 'clientSecret' ? undefined : env[variable];
    const value = given ?? (fromEnv === '' ? undefined : fromEnv);
    if (value === undefined && required) {
      missing.push(`${name} (${variable}: ${describeOption[name]})`);
    }
    if (value !== undefined && (typeof value !== 'string' || value.trim() === '')) {
      throw new ConfigurationError(
        `${name} is empty: pass createPartnerClient({ ${name} }) or set ${variable} (${describeOption[name]}).`,
      );
    }
    return { value, source: given === undefined ? variable : name };
  };
  const allowInsecure = options.dangerouslyAllowInsecureHttp === true;
  const url = (
    name: 'authUrl' | 'baseUrl' | 'audience',
    picked: { value: string | undefined; source: string },
    carriesToken: boolean,
  ) => {
    if (picked.value === undefined) return undefined;
    const from = picked.source === name ? '' : ` (from ${picked.source})`;
    let parsed: URL;
    try {
      parsed = new URL(picked.value);
    } catch (cause) {
      // A value that may hold credentials (user:pass@…) is not echoed.
      const echo = /[@:]/.test(picked.value.replace(/^[a-z][a-z0-9+.-]*:\/\//i, ''))
        ? ''
        : ` ${JSON.stringify(picked.value.slice(0, 100))}`;
      throw new ConfigurationError(
        `${name}${echo}${from} is not an absolute URL; expected ${describeOption[name]}.`,
        { cause },
      );
    }
    if (parsed.username !== '' || parsed.password !== '') {
      throw new ConfigurationError(
        `${name}${from} must not carry credentials (user:password@) in the URL; remove them and pass clientId and clientSecret instead.`,
      );
    }
    if (carriesToken && parsed.protocol !== 'https:') {
      if (parsed.protocol !== 'http:') {
        throw new ConfigurationError(`${name}${from} uses ${parsed.protocol}; expected an https: URL.`);
      }
      if (!isLoopbackHost(parsed.hostname) && !allowInsecure) {
        throw new ConfigurationError(
          `${name}${from} ${shown(parsed)} is plain http on a non-loopback host: the ${name === 'authUrl' ? 'client secret' : 'access token'} would travel unencrypted. Use https (http is accepted only for localhost/127.0.0.1/[::1]).`,
        );
      }
    }
    return parsed;
  };

  const baseUrlPicked = pick('baseUrl', true);
  const authUrlPicked = pick('authUrl', withCredentials);
  const audiencePicked = pick('audience', false);
  const clientId = pick('clientId', withCredentials).value;
  const clientSecret = pick('clientSecret', withCredentials).value;
  if (missing.length > 0) {
    throw new ConfigurationError(
      `${missing.length === 1 ? 'An option is' : `${missing.length} options are`} missing: ${missing.join('; ')}. Pass ${
        missing.length === 1 ? 'it' : 'them'
      } to createPartnerClient({ … }) or set the environment variable${missing.length === 1 ? '' : 's'}.`,
    );
  }
  const baseUrl = url('baseUrl', baseUrlPicked, true)!;
  const authUrl = url('authUrl', authUrlPicked, true);
  url('audience', audiencePicked, false);
  // Kept as configured, not normalised: the auth server compares the audience as a string.
  const audience = audiencePicked.value ?? baseUrlPicked.value!;

  const timeoutMs = checkTimeout(options.timeoutMs ?? defaults.timeoutMs, 'timeoutMs');
  const maxRetries = checkRetries(options.maxRetries ?? defaults.maxRetries, 'maxRetries');
  return { environment, authUrl, baseUrl, audience, clientId, clientSecret, timeoutMs, maxRetries };
}

function checkTimeout(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigurationError(
      `${name} ${String(value)} is not a positive number of milliseconds; pass e.g. 30000 (the default) or leave it out.`,
    );
  }
  return value;
}

function checkRetries(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new ConfigurationError(
      `${name} ${String(value)} is not a whole number ≥ 0; pass e.g. 2 (the default), or 0 to never retry.`,
    );
  }
  return value;
}

function checkWhole(value: unknown, name: string, min: number, example: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new ConfigurationError(
      `${name} ${String(value)} is not a whole number ≥ ${min}; pass e.g. ${example}.`,
    );
  }
}

/** Checks per-call options the way the client options are checked; throws ConfigurationError. */
export function checkCallOptions(options: Record<string, unknown>): void {
  const { timeoutMs, maxRetries, signal, partnerId, limit, offset, pageSize } = options;
  if (timeoutMs !== undefined) checkTimeout(timeoutMs, 'timeoutMs (per call)');
  if (maxRetries !== undefined) checkRetries(maxRetries, 'maxRetries (per call)');
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ConfigurationError(
      'signal (per call) is not an AbortSignal; pass e.g. AbortSignal.timeout(5000).',
    );
  }
  if (partnerId !== undefined && (typeof partnerId !== 'string' || partnerId === '')) {
    throw new ConfigurationError(
      'partnerId (per call) must be a non-empty string; leave it out to use the partner id of the token.',
    );
  }
  if (limit !== undefined) checkWhole(limit, 'limit', 1, '25');
  if (offset !== undefined) checkWhole(offset, 'offset', 0, '0');
  if (pageSize !== undefined) checkWhole(pageSize, 'pageSize', 1, '25 (the default)');
}
