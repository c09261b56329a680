import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../src/errors.js';
import { resolveConnection } from '../src/options.js';

const env = {
  PARTNER_AUTH_URL: 'https://auth.example',
  PARTNER_BASE_URL: 'https://api.example/partner',
  PARTNER_CLIENT_ID: 'id-from-env',
  PARTNER_CLIENT_SECRET: 'secret-from-env',
};

describe('resolveConnection', () => {
  it('reads every option from its PARTNER_* variable, the audience defaulting to the base URL as written', () => {
    expect(resolveConnection({}, env)).toEqual({
      environment: 'staging',
      authUrl: new URL('https://auth.example'),
      baseUrl: new URL('https://api.example/partner'),
      audience: 'https://api.example/partner',
      clientId: 'id-from-env',
      clientSecret: 'secret-from-env',
      timeoutMs: 30_000,
      maxRetries: 2,
    });
  });

  it('prefers options over variables, and PARTNER_AUDIENCE over the base URL', () => {
    const resolved = resolveConnection(
      { baseUrl: 'http://127.0.0.1:9/', clientId: 'given', timeoutMs: 10, maxRetries: 0 },
      { ...env, PARTNER_AUDIENCE: 'https://aud.example' },
    );
    expect(resolved).toMatchObject({
      baseUrl: new URL('http://127.0.0.1:9/'),
      audience: 'https://aud.example',
      clientId: 'given',
      timeoutMs: 10,
      maxRetries: 0,
    });
  });

  it('names every missing option with its variable, at once', () => {
    const { PARTNER_CLIENT_SECRET: _, ...withoutSecret } = env;
    expect(() => resolveConnection({}, withoutSecret)).toThrow(
      new ConfigurationError(
        'An option is missing: clientSecret (PARTNER_CLIENT_SECRET: the client secret from the partner administration console). Pass it to createPartnerClient({ … }) or set the environment variable.',
      ),
    );
    expect(() => resolveConnection({}, {})).toThrow(
      '4 options are missing: baseUrl (PARTNER_BASE_URL: the partner API address, e.g. https://partner-api.example); authUrl (PARTNER_AUTH_URL: the authentication service address, e.g. https://auth.partner.example); clientId (PARTNER_CLIENT_ID: the client id from the partner administration console); clientSecret (PARTNER_CLIENT_SECRET: the client secret from the partner administration console). Pass them to createPartnerClient({ … }) or set the environment variables.',
    );
    expect(() => resolveConnection({}, { ...env, PARTNER_AUTH_URL: '' })).toThrow(
      'An option is missing: authUrl (PARTNER_AUTH_URL',
    );
    expect(() => resolveConnection({ clientId: ' ' }, env)).toThrow(
      'clientId is empty: pass createPartnerClient({ clientId }) or set PARTNER_CLIENT_ID',
    );
  });

  it('refuses URLs with credentials in them, without echoing the password', () => {
    for (const name of ['baseUrl', 'authUrl', 'audience'] as const) {
      const error = (() => {
        try {
          resolveConnection({ [name]: 'https://user:hunter2-secret@api.example' }, env);
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error?.message).toBe(
        `${name} must not carry credentials (user:password@) in the URL; remove them and pass clientId and clientSecret instead.`,
      );
      expect(JSON.stringify(error)).not.toContain('hunter2');
    }
    // Not even when the value is not a URL of ours.
    for (const baseUrl of ['user:hunter2@api', 'api.example/user:hunter2@x']) {
      const message = (() => {
        try {
          resolveConnection({ baseUrl }, env);
        } catch (e) {
          return (e as Error).message;
        }
        return 'accepted';
      })();
      expect(message).toMatch(/^baseUrl /);
      expect(message).not.toContain('hunter2');
    }
  });

  it('refuses a plain-http baseUrl on a non-loopback host unless the loud opt-out is set', () => {
    expect(() => resolveConnection({ baseUrl: 'http://api.example' }, env)).toThrow(
      'baseUrl http://api.example is plain http on a non-loopback host: the access token would travel unencrypted. Use https (http is accepted only for localhost/127.0.0.1/[::1]).',
    );
    expect(() => resolveConnection({ authUrl: 'http://auth.example' }, env)).toThrow(
      'the client secret would travel unencrypted',
    );
    expect(
      resolveConnection({ baseUrl: 'http://api.example', dangerouslyAllowInsecureHttp: true }, env).baseUrl
        .href,
    ).toBe('http://api.example/');
    expect(resolveConnection({ baseUrl: 'http://localhost:8080' }, env).baseUrl.host).toBe('localhost:8080');
  });

  it('says where a bad URL came from', () => {
    expect(() => resolveConnection({ baseUrl: 'partner-api' }, env)).toThrow(
      'baseUrl "partner-api" is not an absolute URL; expected the partner API address, e.g. https://partner-api.example.',
    );
    expect(() => resolveConnection({}, { ...env, PARTNER_AUTH_URL: 'auth' })).toThrow(
      'authUrl "auth" (from PARTNER_AUTH_URL) is not an absolute URL; expected the authentication service address, e.g. https://auth.partner.example.',
    );
  });

  it('needs no credentials when a token provider is supplied', () => {
    expect(resolveConnection({ baseUrl: 'http://127.0.0.1:9' }, {}, false)).toMatchObject({
      authUrl: undefined,
      clientId: undefined,
      clientSecret: undefined,
    });
  });

  it('refuses a timeout or retry count that makes no sense', () => {
    expect(() => resolveConnection({ timeoutMs: 0 }, env)).toThrow(
      'timeoutMs 0 is not a positive number of milliseconds; pass e.g. 30000 (the default) or leave it out.',
    );
    expect(() => resolveConnection({ maxRetries: 1.5 }, env)).toThrow(
      'maxRetries 1.5 is not a whole number ≥ 0; pass e.g. 2 (the default), or 0 to never retry.',
    );
  });
});

describe('resolveConnection: environment production', () => {
  const production = { environment: 'production' as const };

  it('takes authUrl and baseUrl from the options only, never from the PARTNER_* variables', () => {
    expect(() => resolveConnection(production, env)).toThrow(
      new ConfigurationError(
        "environment 'production' needs authUrl and baseUrl passed to createPartnerClient({ environment: 'production', authUrl, baseUrl, … }): the production addresses your onboarding gave you. PARTNER_AUTH_URL and PARTNER_BASE_URL are not read in production, so that a staging value can never be used there.",
      ),
    );
    expect(() => resolveConnection({ ...production, authUrl: 'https://auth.prod.example' }, env)).toThrow(
      "environment 'production' needs baseUrl passed to createPartnerClient",
    );
    expect(() => resolveConnection({ ...production, authUrl: 'https://auth.prod.example' }, env)).toThrow(
      'PARTNER_BASE_URL is not read in production',
    );
  });

  it('ignores PARTNER_AUDIENCE (a staging value) and still reads the credentials from the variables', () => {
    const resolved = resolveConnection(
      { ...production, authUrl: 'https://auth.prod.example', baseUrl: 'https://api.prod.example' },
      { ...env, PARTNER_AUDIENCE: 'https://api.staging.example' },
    );
    expect(resolved).toMatchObject({
      environment: 'production',
      authUrl: new URL('https://auth.prod.example'),
      audience: 'https://api.prod.example',
      clientId: 'id-from-env',
      clientSecret: 'secret-from-env',
    });
    // Control: the same variables outside production do set the audience.
    expect(
      resolveConnection(
        { baseUrl: 'https://api.prod.example' },
        { ...env, PARTNER_AUDIENCE: 'https://api.staging.example' },
      ).audience,
    ).toBe('https://api.staging.example');
  });

  it('refuses an unknown environment', () => {
    expect(() => resolveConnection({ environment: 'prod' as never }, env)).toThrow(
      `environment must be 'staging' or 'production', got "prod".`,
    );
  });
});
