import { createTokenProvider } from '@partner-lending/auth';
import { CLIENT_ID, CLIENT_SECRET, type TokenServer } from './token-server.mjs';

/**
 * The cache key a provider for `server` (default scopes) hands its store, recorded through a store
 * that holds nothing: how a test finds the Redis key of that provider's token.
 */
export async function providerCacheKey(server: TokenServer): Promise<string> {
  let seen = '';
  await createTokenProvider({
    tokenUrl: server.tokenUrl,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    audience: server.audience,
    store: {
      get: (key) => {
        seen = key;
        return Promise.resolve(undefined);
      },
      set: () => Promise.resolve(),
      delete: () => Promise.resolve(),
    },
  }).getToken();
  return seen;
}
