import { API_CONTROL, defineCheck, notVerified } from '../../check.js';
import { hs256PublicKeyTokens } from '../../forgery/token-forger.js';
import { expectAllRefused } from '../helpers/refusal.js';

/** The same claims signed HS256 with the server's public key (PEM) as the HMAC secret are refused. */
export default defineCheck({
  id: 'integrity-hs256-public-key',
  title: 'A token signed HS256 with the public key as secret is refused (algorithm confusion)',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 8725 §2.1, §3.1; RFC 9068 §4',
  citation:
    'RFC 9068 §4: "The resource server MUST validate the signature of all incoming JWT access tokens according to [RFC7515] using the algorithm specified in the JWT "alg" Header Parameter."; RFC 8725 §3.1: "Libraries MUST enable the caller to specify a supported set of algorithms and MUST NOT use any other algorithms when performing cryptographic operations."',
  precondition: `${API_CONTROL}; the auth server publishes a key set`,
  records: 'the key set fetched; GET loans with each HS256 token; the positive control',
  fix: 'pin the algorithm per key (RS256 for RSA keys) so that an HS256 token cannot be verified with the public key as a secret',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const jwks = await context.jwks();
    if (!jwks)
      return notVerified(
        'no key set found (JWKS at /.well-known/jwks.json or in the server metadata): nothing to confuse',
      );
    const tokens = await hs256PublicKeyTokens(context.main.accessToken!, jwks);
    if (tokens.length === 0) return notVerified(`the key set at ${jwks.url} has no public key`);
    return expectAllRefused(
      context,
      tokens.map(
        (token, index) => [`HS256 with public key ${index + 1} of ${tokens.length}`, token] as const,
      ),
    );
  },
});
