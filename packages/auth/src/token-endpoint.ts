import { ConfigurationError, InsecureTokenUrlError } from './errors.js';

/**
 * Where tokens come from. The client secret travels in every token request, so the endpoint must be
 * https; plain http is accepted only on loopback (local mocks and tests), where nothing leaves the host.
 */

/** True for `localhost`, `*.localhost`, 127.0.0.0/8 and `[::1]`. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The token endpoint from `tokenUrl` (used as is) or `authUrl` (`{auth_url}/oauth/token`, API documentation §4.1).
 * Exactly one must be given.
 */
export function resolveTokenUrl(options: {
  authUrl?: string | undefined;
  tokenUrl?: string | undefined;
}): URL {
  const { authUrl, tokenUrl } = options;
  if ((authUrl === undefined) === (tokenUrl === undefined)) {
    throw new ConfigurationError(
      'createTokenProvider needs exactly one of authUrl (the auth service address; the token endpoint is {authUrl}/oauth/token) or tokenUrl (the full token endpoint address).',
    );
  }
  const name = authUrl === undefined ? 'tokenUrl' : 'authUrl';
  const raw = (authUrl ?? tokenUrl) as string;
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new ConfigurationError(
      `${name} ${JSON.stringify(raw)} is not an absolute URL; expected e.g. https://auth.example.`,
      {
        cause,
      },
    );
  }
  if (url.username || url.password) {
    throw new ConfigurationError(
      `${name} must not carry credentials in the URL; pass clientId and clientSecret instead.`,
    );
  }
  if (authUrl !== undefined) {
    const base = new URL(url.href);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    base.search = '';
    base.hash = '';
    url = new URL('oauth/token', base);
  }
  return url;
}

/**
 * Refuses a URL the client secret or key material must not travel over: anything but https, except
 * http on loopback, unless the caller set the loud opt-out.
 */
export function assertSecureUrl(url: URL, what: string, allowInsecureHttp: boolean): void {
  if (url.protocol === 'https:') return;
  if (url.protocol !== 'http:') {
    throw new ConfigurationError(
      `${what} ${url.origin}${url.pathname} uses ${url.protocol}; expected an https: URL.`,
    );
  }
  if (isLoopbackHost(url.hostname) || allowInsecureHttp) return;
  throw new InsecureTokenUrlError(
    `${what} ${url.origin}${url.pathname} is plain http on a non-loopback host: the client credentials and tokens would travel unencrypted. Use https (http is accepted only for localhost/127.0.0.1/[::1]).`,
  );
}
