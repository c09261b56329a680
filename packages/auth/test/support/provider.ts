import { createTokenProvider, type TokenProviderOptions } from '../../src/token-provider.js';
import { CLIENT_ID, CLIENT_SECRET, type TokenServer } from './token-server.js';

/** A provider aimed at the test server; retries sleep for no real time unless a test says otherwise. */
export function providerFor(server: TokenServer, options: Partial<TokenProviderOptions> = {}) {
  return createTokenProvider({
    tokenUrl: server.tokenUrl,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    audience: server.audience,
    sleep: async () => {},
    random: () => 0,
    ...options,
  });
}
