import { describe, expectTypeOf, it } from 'vitest';
import {
  type AccessToken,
  createAuthFetch,
  createTokenProvider,
  parseWwwAuthenticate,
  type StoredToken,
  type TokenProvider,
  type TokenStore,
} from '../src/index.js';

describe('public types', () => {
  it('getToken resolves to an AccessToken whose tokenType is the literal Bearer', () => {
    expectTypeOf<TokenProvider['getToken']>().returns.resolves.toEqualTypeOf<AccessToken>();
    expectTypeOf<AccessToken['tokenType']>().toEqualTypeOf<'Bearer'>();
  });

  it('createAuthFetch returns a fetch-shaped function', () => {
    expectTypeOf(createAuthFetch).returns.toBeCallableWith('https://api.example/x', { method: 'POST' });
    expectTypeOf(createAuthFetch).returns.returns.resolves.toEqualTypeOf<Response>();
  });

  it('parseWwwAuthenticate returns challenges', () => {
    expectTypeOf(parseWwwAuthenticate).returns.toEqualTypeOf<
      Array<{ scheme: string; params: Record<string, string>; token68?: string }>
    >();
  });

  it('the store interface is async and holds data', () => {
    expectTypeOf<TokenStore['get']>().returns.toEqualTypeOf<Promise<StoredToken | undefined>>();
    expectTypeOf<TokenStore['set']>().parameters.toEqualTypeOf<[string, StoredToken, number]>();
  });

  it('refuses options that must not compile', () => {
    // @ts-expect-error clientSecret is required
    createTokenProvider({ authUrl: 'https://a.example', clientId: 'id', audience: 'https://api.example' });
    createTokenProvider({
      authUrl: 'https://a.example',
      clientId: 'id',
      clientSecret: 's',
      audience: 'https://api.example',
      // @ts-expect-error only 'body' and 'basic' exist
      clientAuth: 'jwt',
    });
    // @ts-expect-error insufficientScope is 'throw' | 'return'
    createAuthFetch({} as TokenProvider, { insufficientScope: 'ignore' });
  });
});
