import { describe, expect, it, vi } from 'vitest';
import { ConfigurationError, InsecureTokenUrlError, PartnerApiError } from '../src/errors.js';
import { assertSecureUrl, isLoopbackHost, resolveTokenUrl } from '../src/token-endpoint.js';
import { createTokenProvider } from '../src/token-provider.js';

const base = { clientId: 'id', clientSecret: 'secret-value', audience: 'https://api.example' };

describe('resolveTokenUrl', () => {
  it('appends oauth/token to authUrl, with or without a trailing slash or a path', () => {
    expect(resolveTokenUrl({ authUrl: 'https://auth.example' }).href).toBe(
      'https://auth.example/oauth/token',
    );
    expect(resolveTokenUrl({ authUrl: 'https://auth.example/' }).href).toBe(
      'https://auth.example/oauth/token',
    );
    expect(resolveTokenUrl({ authUrl: 'https://auth.example/tenant-a' }).href).toBe(
      'https://auth.example/tenant-a/oauth/token',
    );
  });

  it('uses tokenUrl as it is', () => {
    expect(resolveTokenUrl({ tokenUrl: 'https://auth.example/custom/token' }).href).toBe(
      'https://auth.example/custom/token',
    );
  });

  it('needs exactly one of authUrl and tokenUrl', () => {
    const message =
      'createTokenProvider needs exactly one of authUrl (the auth service address; the token endpoint is {authUrl}/oauth/token) or tokenUrl (the full token endpoint address).';
    expect(() => resolveTokenUrl({})).toThrow(message);
    expect(() => resolveTokenUrl({ authUrl: 'https://a.example', tokenUrl: 'https://a.example/t' })).toThrow(
      message,
    );
  });

  it('refuses relative URLs and URLs with credentials', () => {
    expect(() => resolveTokenUrl({ authUrl: 'auth.example' })).toThrow(
      'authUrl "auth.example" is not an absolute URL; expected e.g. https://auth.example.',
    );
    expect(() => resolveTokenUrl({ tokenUrl: 'https://u:p@auth.example/t' })).toThrow(
      'tokenUrl must not carry credentials in the URL; pass clientId and clientSecret instead.',
    );
  });
});

describe('https only, except loopback', () => {
  it('knows the loopback hosts', () => {
    for (const host of ['localhost', 'api.localhost', '127.0.0.1', '127.1.2.3', '[::1]']) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of ['example.com', '10.0.0.1', '128.0.0.1', 'localhost.example.com', '[::2]']) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });

  it('accepts https anywhere and http on loopback', () => {
    expect(() => createTokenProvider({ ...base, authUrl: 'https://auth.example' })).not.toThrow();
    expect(() => createTokenProvider({ ...base, authUrl: 'http://127.0.0.1:4010' })).not.toThrow();
    expect(() => createTokenProvider({ ...base, authUrl: 'http://localhost:4010' })).not.toThrow();
    expect(() => createTokenProvider({ ...base, authUrl: 'http://[::1]:4010' })).not.toThrow();
  });

  it('refuses plain http to another host with InsecureTokenUrlError', () => {
    const attempt = () => createTokenProvider({ ...base, authUrl: 'http://auth.example' });
    expect(attempt).toThrow(InsecureTokenUrlError);
    expect(attempt).toThrow(
      'the token endpoint http://auth.example/oauth/token is plain http on a non-loopback host: the client credentials and tokens would travel unencrypted. Use https (http is accepted only for localhost/127.0.0.1/[::1]).',
    );
  });

  it('refuses other protocols even with the opt-out', () => {
    expect(() => assertSecureUrl(new URL('ftp://auth.example/t'), 'the token endpoint', true)).toThrow(
      'the token endpoint ftp://auth.example/t uses ftp:; expected an https: URL.',
    );
  });

  it('accepts plain http with the loud dangerouslyAllowInsecureHttp opt-out, and warns', () => {
    const emitWarning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      expect(() =>
        createTokenProvider({ ...base, authUrl: 'http://auth.example', dangerouslyAllowInsecureHttp: true }),
      ).not.toThrow();
      expect(emitWarning).toHaveBeenCalledWith(
        'dangerouslyAllowInsecureHttp is set: client credentials and access tokens are sent over plain http.',
        { code: 'PARTNER_AUTH_INSECURE_HTTP' },
      );
    } finally {
      emitWarning.mockRestore();
    }
  });

  it('applies the same rule to verify.jwksUrl', () => {
    expect(() =>
      createTokenProvider({
        ...base,
        authUrl: 'https://auth.example',
        verify: { jwksUrl: 'http://auth.example/.well-known/jwks.json' },
      }),
    ).toThrow(InsecureTokenUrlError);
  });
});

describe('option checks', () => {
  it('says which option is wrong', () => {
    expect(() => createTokenProvider({ ...base, clientSecret: '', authUrl: 'https://a.example' })).toThrow(
      'createTokenProvider: clientSecret must be a non-empty string (from the partner administration console).',
    );
    expect(() =>
      createTokenProvider({ ...base, authUrl: 'https://a.example', clientAuth: 'jwt' as 'body' }),
    ).toThrow(`createTokenProvider: clientAuth must be 'body' or 'basic', got "jwt".`);
    expect(() =>
      createTokenProvider({ ...base, authUrl: 'https://a.example', refresh: { hardWindowMs: -1 } }),
    ).toThrow('createTokenProvider: refresh.hardWindowMs must be a finite number ≥ 0, got -1.');
    expect(() =>
      createTokenProvider({ ...base, authUrl: 'https://a.example', scopes: ['read loans'] }),
    ).toThrow(ConfigurationError);
  });

  it('throws the family’s ConfigurationError (ERR_CONFIGURATION), not a TypeError', async () => {
    const refused = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const errors = [
      refused(() => createTokenProvider({ ...base, clientSecret: '', authUrl: 'https://a.example' })),
      refused(() =>
        createTokenProvider({ ...base, authUrl: 'https://a.example', tokenUrl: 'https://a.example/t' }),
      ),
      refused(() => createTokenProvider({ ...base, authUrl: 'https://a.example', verify: {} })),
      refused(() =>
        createTokenProvider({ ...base, authUrl: 'https://a.example', retry: { maxRetries: 1.5 } }),
      ),
      await createTokenProvider({ ...base, authUrl: 'https://a.example' })
        .getToken({ timeoutMs: 0 })
        .catch((error: unknown) => error),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toBeInstanceOf(PartnerApiError);
      expect(error).not.toBeInstanceOf(TypeError);
      expect(error).toMatchObject({ name: 'ConfigurationError', code: 'ERR_CONFIGURATION' });
      expect(String(error)).toMatch(/^ConfigurationError: /);
    }
    // Negative control: a valid provider is made without an error.
    expect(refused(() => createTokenProvider({ ...base, authUrl: 'https://a.example' }))).toBeUndefined();
  });
});
