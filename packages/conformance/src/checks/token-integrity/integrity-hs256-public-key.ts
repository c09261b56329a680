import { defineCheck, skipped } from '../../check.js';
import { hs256PublicKeyTokens } from '../../token-forger.js';
import { expectAllRefused } from './refusal.js';

/** The same claims signed HS256 with the server's public key (PEM) as the HMAC secret are refused. */
export default defineCheck({
  id: 'integrity-hs256-public-key',
  title: 'A token signed HS256 with the public key as secret is refused (algorithm confusion)',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 8725 §2.1, §3.1; RFC 9068 §4',
  async run(context) {
    const jwks = await context.jwks();
    if (!jwks)
      return skipped(
        'no key set found (JWKS at /.well-known/jwks.json or in the server metadata): nothing to confuse',
      );
    const tokens = await hs256PublicKeyTokens(context.main.accessToken!, jwks);
    if (tokens.length === 0) return skipped(`the key set at ${jwks.url} has no public key`);
    return expectAllRefused(
      context,
      tokens.map(
        (token, index) => [`HS256 with public key ${index + 1} of ${tokens.length}`, token] as const,
      ),
    );
  },
});
