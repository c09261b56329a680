import type { ClientSession, IssuedToken, RecordedExchange } from '../../../src/index.js';

/** A hand-built session for the pure client checks: one partner, tokens T1…, exchanges in order. */
export function sessionOf(
  exchanges: Array<
    Partial<RecordedExchange> & Pick<RecordedExchange, 'server' | 'at' | 'method' | 'target' | 'status'>
  >,
  tokens: Array<Partial<IssuedToken> & Pick<IssuedToken, 'ref' | 'issuedAt' | 'expAt'>>,
): ClientSession {
  return {
    kind: 'partner-conformance-client-session',
    sessionVersion: 2,
    tool: { name: '@partner-lending/conformance', version: '0.0.0-test' },
    startedAt: '2026-11-23T12:00:00.000Z',
    durationMs: Math.max(0, ...exchanges.map((e) => e.end ?? e.at + 5)),
    stage: {
      authUrl: 'http://127.0.0.1:1',
      baseUrl: 'http://127.0.0.1:2',
      tokenUrl: 'http://127.0.0.1:1/oauth/token',
      audience: 'http://127.0.0.1:2',
      partnerId: 'p1',
      authorizedScopes: ['read:loans', 'create:loan_draft'],
      ttlSeconds: 4,
      longTtlSeconds: 3600,
      shortPhaseMs: 12_000,
      tokenDelayMs: 0,
      apiDelayMs: 0,
    },
    scenarios: [],
    journey: { command: ['journey'], exitCode: 0, signal: null, durationMs: 1000, ending: 'exited' },
    exchanges: exchanges.map((exchange, index) => ({
      seq: index + 1,
      end: exchange.at + 5,
      requestHeaders: {},
      body: { bytes: 0, kind: 'none' },
      leaks: [],
      responseHeaders: {},
      responseBody: '',
      ...exchange,
    })),
    tokens: tokens.map((token, index) => ({
      seq: index + 1,
      expiresIn: Math.round((token.expAt - token.issuedAt) / 1000),
      scope: ['read:loans'],
      partnerId: 'p1',
      last6: 'abcdef',
      // Like the stage: a token that lives longer than the short phase's (4 s, and its second) is long.
      phase: token.expAt - token.issuedAt > 5000 ? ('long' as const) : ('short' as const),
      ...token,
    })),
    maxExchanges: 50_000,
    dropped: 0,
  };
}

/** A GET loans call with token `ref` at `at` ms, answered `status`. */
export const loans = (at: number, ref: string, status = 200, extra: Partial<RecordedExchange> = {}) => ({
  server: 'api' as const,
  at,
  method: 'GET',
  target: '/v3/partner/p1/loans?limit=10',
  status,
  bearer: { scheme: 'Bearer', wellFormed: true, token: ref },
  requestHeaders: { authorization: `Bearer …abcdef` },
  ...extra,
});

/** A token request at `at` that issued `ref`. */
export const tokenRequest = (at: number, ref: string | undefined, scope = 'read:loans') => ({
  server: 'auth' as const,
  at,
  method: 'POST',
  target: '/oauth/token',
  status: ref ? 200 : 400,
  ...(ref && { issued: ref }),
  requestHeaders: { 'content-type': 'application/x-www-form-urlencoded' },
  body: { bytes: 100, kind: 'form' as const },
  form: {
    grantType: 'client_credentials',
    scope,
    audience: 'http://127.0.0.1:2',
    resource: [],
    clientAuth: 'body' as const,
    clientIdMatches: true,
    secretMatches: true,
    repeated: [],
  },
});
