import type { JSONWebKeySet, JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { ConfigurationError } from '../errors.js';
import { assertSecureUrl } from '../token-endpoint.js';
import type { VerifyOptions } from './options.js';

/** Algorithms accepted when verifying: asymmetric only, never `none` or a shared-secret HS* algorithm. */
export const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256'] as const;

export type JwtVerifier = (jwt: string) => Promise<JWTPayload>;

/**
 * The signature (and issuer) check of `verify`, or undefined without it. jose is loaded on the first
 * verification, not when the package is imported (most of the cold-import time was jose's module graph).
 */
export function createJwtVerifier(
  verify: VerifyOptions | undefined,
  context: { fetch: typeof globalThis.fetch; clock: Clock; clockSkewMs: number; allowInsecure: boolean },
): JwtVerifier | undefined {
  if (!verify) return undefined;
  const { jwks, jwksUrl, issuer } = verify;
  if ((jwks === undefined) === (jwksUrl === undefined)) {
    throw new ConfigurationError(
      'createTokenProvider: verify needs exactly one of jwksUrl (the JWKS address) or jwks (the key set).',
    );
  }
  let makeKeySet: (jose: typeof import('jose')) => Parameters<typeof import('jose').jwtVerify>[1];
  if (jwksUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(jwksUrl);
    } catch (cause) {
      throw new ConfigurationError(
        `createTokenProvider: verify.jwksUrl ${JSON.stringify(jwksUrl)} is not an absolute URL.`,
        {
          cause,
        },
      );
    }
    assertSecureUrl(url, 'verify.jwksUrl', context.allowInsecure);
    makeKeySet = (jose) => jose.createRemoteJWKSet(url, { [jose.customFetch]: context.fetch });
  } else {
    if (!Array.isArray((jwks as { keys?: unknown }).keys)) {
      throw new ConfigurationError(
        'createTokenProvider: verify.jwks must be a JWKS object: { keys: [...] }.',
      );
    }
    makeKeySet = (jose) => jose.createLocalJWKSet(jwks as JSONWebKeySet);
  }
  let keySet: ReturnType<typeof makeKeySet> | undefined;
  return async (jwt) => {
    const jose = await import('jose');
    keySet ??= makeKeySet(jose);
    return (
      await jose.jwtVerify(jwt, keySet as never, {
        algorithms: [...ALLOWED_ALGORITHMS],
        ...(issuer !== undefined ? { issuer } : {}),
        clockTolerance: Math.ceil(context.clockSkewMs / 1000),
        currentDate: new Date(context.clock.now()),
      })
    ).payload;
  };
}
