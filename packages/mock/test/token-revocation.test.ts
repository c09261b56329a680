import { afterEach, describe, expect, it } from 'vitest';
import { type RunningMock, startMock } from '../src/index.js';
import { getLoans, manualClock, sharedSigningKey, tokenFor } from './helpers.js';

// The operator control POST /operator/revoke-tokens against the real mock on 127.0.0.1: a token issued
// before the revocation is refused with invalid_token ("the token was revoked"), one issued after it
// (even in the same second) is accepted; without an operator key the route does not exist.

const operatorKey = 'op_test_operator_key_0123456789';
const mocks: RunningMock[] = [];
afterEach(async () => {
  for (const mock of mocks.splice(0)) await mock.close();
});

async function start(options: { operatorKey?: string; clock?: () => number } = {}) {
  const mock = await startMock({ signingKey: await sharedSigningKey(), ...options });
  mocks.push(mock);
  return mock;
}

const revoke = (mock: RunningMock, body: unknown, key = operatorKey, contentType = 'application/json') =>
  fetch(`${mock.authUrl}/operator/revoke-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('POST /operator/revoke-tokens', () => {
  it('revokes every token issued to the partner so far; a new token is accepted', async () => {
    const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0, 100));
    const mock = await start({ operatorKey, clock: clock.now });
    const [first, other] = mock.clients as [(typeof mock.clients)[0], (typeof mock.clients)[0]];
    const old = await tokenFor(mock, first);
    clock.advance(2);
    const older = await tokenFor(mock, first);
    const otherPartner = await tokenFor(mock, other);
    expect((await getLoans(mock, `Bearer ${old}`)).status).toBe(200);

    const answer = await revoke(mock, { partnerId: first.partnerId });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({
      partnerId: first.partnerId,
      revokedAt: '2026-06-01T12:00:02.100Z',
    });

    for (const token of [old, older]) {
      const refused = await getLoans(mock, `Bearer ${token}`);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe(
        'Bearer error="invalid_token", error_description="the token was revoked"',
      );
      expect(JSON.parse(refused.text)).toEqual({
        error: 'invalid_token',
        error_description: 'the token was revoked',
      });
    }
    // A token issued after the revocation, in the very same second, and one a second later: accepted.
    const sameSecond = await tokenFor(mock, first);
    expect((await getLoans(mock, `Bearer ${sameSecond}`)).status).toBe(200);
    clock.advance(1);
    const fresh = await tokenFor(mock, first);
    expect((await getLoans(mock, `Bearer ${fresh}`)).status).toBe(200);
    // Another partner's tokens are untouched.
    expect((await getLoans(mock, `Bearer ${otherPartner}`, other.partnerId)).status).toBe(200);
    // Refused calls still name the partner in the request log, with invalid_token.
    expect(mock.requestLog().filter((entry) => entry.error === 'invalid_token')).toHaveLength(2);
  });

  it('control: without the operator key the route is 404 and a token stays valid', async () => {
    const mock = await start();
    const token = await tokenFor(mock);
    const answer = await revoke(mock, { partnerId: mock.clients[0]!.partnerId });
    expect(answer.status).toBe(404);
    expect((await getLoans(mock, `Bearer ${token}`)).status).toBe(200);
  });

  it('refuses a wrong or missing operator key (401, a challenge), and revokes nothing', async () => {
    const mock = await start({ operatorKey });
    const token = await tokenFor(mock);
    const partnerId = mock.clients[0]!.partnerId;
    for (const key of ['op_test_operator_key_012345678X', '', operatorKey.slice(0, -1)]) {
      const answer = await revoke(mock, { partnerId }, key);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="partner-mock-operator"');
      const body = (await answer.json()) as Record<string, string>;
      expect(JSON.stringify(body)).not.toContain(operatorKey);
    }
    expect((await getLoans(mock, `Bearer ${token}`)).status).toBe(200);
    // The operator key never lands in the request log.
    expect(JSON.stringify(mock.requestLog())).not.toContain(operatorKey);
  });

  it.each([
    ['no JSON', 'partnerId=x', 'application/x-www-form-urlencoded', 400],
    ['malformed JSON', '{', 'application/json', 400],
    ['no partnerId', {}, 'application/json', 400],
    ['an unknown partner', { partnerId: 'ptn_nobody' }, 'application/json', 404],
  ])('answers %s with a clear error', async (_name, body, contentType, status) => {
    const mock = await start({ operatorKey });
    const answer = await revoke(mock, body, operatorKey, contentType);
    expect(answer.status).toBe(status);
    const json = (await answer.json()) as { error_description: string };
    expect(json.error_description).toMatch(
      status === 404 ? /no client of this gate belongs to partner/ : /partnerId/,
    );
  });

  it('answers 405 to another method', async () => {
    const mock = await start({ operatorKey });
    const answer = await fetch(`${mock.authUrl}/operator/revoke-tokens`, {
      headers: { authorization: `Bearer ${operatorKey}` },
    });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('POST');
  });

  it('refuses a short operator key at start', async () => {
    await expect(startMock({ operatorKey: 'short' })).rejects.toMatchObject({
      code: 'ERR_MOCK_OPTIONS',
      message: expect.stringContaining('operatorKey must be one word of at least 16 characters'),
    });
  });
});
