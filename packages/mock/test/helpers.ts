import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { MockClient, RunningMock } from '../src/index.js';

export const form = 'application/x-www-form-urlencoded';

export interface TokenCall {
  status: number;
  headers: Headers;
  body: Record<string, any>;
}

/** POSTs a token request; `params` are form fields (undefined ones left out). */
export async function tokenRequest(
  mock: RunningMock,
  params: Record<string, string | undefined>,
  init: { headers?: Record<string, string>; body?: string } = {},
): Promise<TokenCall> {
  const fields = Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const response = await fetch(mock.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': form, accept: 'application/json', ...init.headers },
    body: init.body ?? new URLSearchParams(fields).toString(),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

/** A valid client-credentials request for `client` (body authentication, the mock's audience). */
export function credentials(
  mock: RunningMock,
  client: MockClient,
  extra: Record<string, string | undefined> = {},
) {
  return {
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    audience: mock.audience,
    ...extra,
  };
}

/** A token for `client` (default the first one), failing the test when none is issued. */
export async function tokenFor(
  mock: RunningMock,
  client = mock.clients[0]!,
  scope?: string,
): Promise<string> {
  const answer = await tokenRequest(mock, credentials(mock, client, { scope }));
  if (answer.status !== 200) throw new Error(`token request failed: ${JSON.stringify(answer.body)}`);
  return answer.body.access_token as string;
}

export function loansUrl(mock: RunningMock, partnerId = mock.clients[0]!.partnerId, query = ''): string {
  return `${mock.baseUrl}/v3/partner/${encodeURIComponent(partnerId)}/loans${query}`;
}

export function pathUrl(mock: RunningMock, tail: string, partnerId = mock.clients[0]!.partnerId): string {
  return `${mock.baseUrl}/v3/partner/${encodeURIComponent(partnerId)}/${tail}`;
}

export async function getLoans(mock: RunningMock, authorization?: string, partnerId?: string, query = '') {
  const response = await fetch(loansUrl(mock, partnerId, query), {
    headers: authorization === undefined ? {} : { authorization },
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

export function decodeJwt(token: string): { header: Record<string, any>; payload: Record<string, any> } {
  const [header, payload] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header!, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(payload!, 'base64url').toString()),
  };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Re-assembles a token with a new header/payload and a given signature part (default: none). */
export function forge(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  signature = '',
): string {
  return `${b64(header)}.${b64(payload)}.${signature}`;
}

let foreignKey: ReturnType<typeof generateKeyPair> | undefined;

/** Signs claims with an RSA key the mock does not know (one per test file). */
export async function signWithForeignKey(
  payload: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<{ token: string; jwk: Record<string, unknown> }> {
  foreignKey ??= generateKeyPair('RS256');
  const { privateKey, publicKey } = await foreignKey;
  const jwk = await exportJWK(publicKey);
  const token = await new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: 'foreign', ...header })
    .sign(privateKey);
  return { token, jwk: jwk as Record<string, unknown> };
}

/** A controllable clock (epoch ms). */
export function manualClock(start = Date.UTC(2026, 0, 1)) {
  let now = start;
  return {
    now: () => now,
    advance(seconds: number) {
      now += seconds * 1000;
    },
  };
}

let sharedPair: ReturnType<typeof generateKeyPair> | undefined;

/** One RS256 pair per test file, handed to startMock so that many mocks start fast. */
export function sharedSigningKey(): ReturnType<typeof generateKeyPair> {
  sharedPair ??= generateKeyPair('RS256');
  return sharedPair;
}
