import { type AccessToken, ScopeNotGrantedError, type TokenProvider } from '@partner-lending/auth';

export const allScopes = ['create:journal_update', 'create:loan_draft', 'create:repayment', 'read:loans'];

/**
 * A token provider with fixed tokens, recording what each call asked for: lets the client tests look at
 * what the SDK asks of the auth layer. The real provider is exercised against the mock.
 */
export function fixedTokenProvider(options: { partnerId?: string; granted?: readonly string[] } = {}) {
  const granted = options.granted ?? allScopes;
  const asked: (readonly string[] | undefined)[] = [];
  let generation = 1;
  const provider: TokenProvider & { asked: typeof asked; invalidations: number } = {
    asked,
    invalidations: 0,
    async getToken(request) {
      asked.push(request?.scopes);
      const missing = (request?.scopes ?? []).filter((scope) => !granted.includes(scope));
      if (missing.length > 0) throw new ScopeNotGrantedError(missing, granted);
      return {
        accessToken: `token-${generation}`,
        tokenType: 'Bearer',
        expiresAt: Date.now() + 3_600_000,
        grantedScopes: granted,
        partnerId: options.partnerId ?? 'partner-1',
        issuer: 'https://auth.test/',
        jti: `jti-${generation}`,
      } satisfies AccessToken;
    },
    async invalidate() {
      provider.invalidations++;
      generation++;
    },
  };
  return provider;
}
