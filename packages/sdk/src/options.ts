import { ConfigurationError } from './errors.js';

/** The environment variables of the toolkit (DESIGN.md), by option. */
export const environmentVariables = {
  authUrl: 'PARTNER_AUTH_URL',
  baseUrl: 'PARTNER_BASE_URL',
  audience: 'PARTNER_AUDIENCE',
  clientId: 'PARTNER_CLIENT_ID',
  clientSecret: 'PARTNER_CLIENT_SECRET',
} as const;

export const defaults = { timeoutMs: 30_000, maxRetries: 2 } as const;

export interface ConnectionOptions {
  authUrl?: string | undefined;
  baseUrl?: string | undefined;
  audience?: string | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
}

export interface ResolvedConnection {
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

/**
 * Resolves each option from `options`, else from its `PARTNER_*` variable. Errors name both.
 * `withCredentials: false` when the caller brings its own token provider.
 */
export function resolveConnection(
  options: ConnectionOptions,
  env: Env,
  withCredentials = true,
): ResolvedConnection {
  const pick = (name: keyof typeof environmentVariables, required: boolean) => {
    const given = options[name];
    const variable = environmentVariables[name];
    const value = given ?? (env[variable] === '' ? undefined : env[variable]);
    if (value === undefined && required) {
      throw new ConfigurationError(
        `${name} is missing: pass createPartnerClient({ ${name} }) or set ${variable} (${describeOption[name]}).`,
      );
    }
    if (value !== undefined && value.trim() === '') {
      throw new ConfigurationError(
        `${name} is empty: pass createPartnerClient({ ${name} }) or set ${variable} (${describeOption[name]}).`,
      );
    }
    return { value, source: given === undefined ? variable : name };
  };
  const url = (
    name: 'authUrl' | 'baseUrl' | 'audience',
    picked: { value: string | undefined; source: string },
  ) => {
    if (picked.value === undefined) return undefined;
    try {
      return new URL(picked.value);
    } catch (cause) {
      const from = picked.source === name ? '' : ` (from ${picked.source})`;
      throw new ConfigurationError(
        `${name} ${JSON.stringify(picked.value)}${from} is not an absolute URL; expected ${describeOption[name]}.`,
        { cause },
      );
    }
  };

  const baseUrl = url('baseUrl', pick('baseUrl', true))!;
  const authUrl = url('authUrl', pick('authUrl', withCredentials));
  const baseUrlPicked = pick('baseUrl', true);
  const audiencePicked = pick('audience', false);
  url('audience', audiencePicked);
  // Kept as configured, not normalised: the auth server compares the audience as a string.
  const audience = audiencePicked.value ?? baseUrlPicked.value!;
  const clientId = pick('clientId', withCredentials).value;
  const clientSecret = pick('clientSecret', withCredentials).value;

  const timeoutMs = options.timeoutMs ?? defaults.timeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ConfigurationError(
      `timeoutMs ${timeoutMs} is not a positive number of milliseconds; pass e.g. 30000 (the default) or leave it out.`,
    );
  }
  const maxRetries = options.maxRetries ?? defaults.maxRetries;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new ConfigurationError(
      `maxRetries ${maxRetries} is not a whole number ≥ 0; pass e.g. 2 (the default), or 0 to never retry.`,
    );
  }
  return { authUrl, baseUrl, audience, clientId, clientSecret, timeoutMs, maxRetries };
}
