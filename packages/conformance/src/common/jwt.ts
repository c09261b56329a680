/** A compact JWS split into its parts, with header and payload decoded (not verified). */
export interface DecodedJwt {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
  readonly parts: readonly [string, string, string];
}

export function base64url(value: string | Uint8Array): string {
  return Buffer.from(value).toString('base64url');
}

function decodePart(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Decodes a compact JWS without verifying it; undefined when it is not one. */
export function decodeJwt(token: string): DecodedJwt | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = decodePart(h);
  const payload = decodePart(p);
  if (!header || !payload) return undefined;
  return { header, payload, parts: [h, p, s] };
}

/** The scopes of a `scope` claim: a space-separated string (RFC 9068) or an array of strings. */
export function scopesOfClaim(claim: unknown): string[] | undefined {
  if (typeof claim === 'string') return claim.split(' ').filter((item) => item.length > 0);
  if (Array.isArray(claim) && claim.every((item) => typeof item === 'string')) return [...claim];
  return undefined;
}

/** The audiences of an `aud` claim: a string or an array of strings (RFC 7519 §4.1.3). */
export function audiencesOfClaim(claim: unknown): string[] | undefined {
  if (typeof claim === 'string') return [claim];
  if (Array.isArray(claim) && claim.every((item) => typeof item === 'string')) return [...claim];
  return undefined;
}

/** Same URL up to a trailing slash (the deployed service's `iss` ends with one). */
export function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}
