import { describe, expect, it } from 'vitest';
import { createMemoryTokenStore, type StoredToken } from '../src/token-store.js';
import { fakeClock } from './support/token-server.js';

const token: StoredToken = {
  accessToken: 'a.b.c',
  tokenType: 'Bearer',
  expiresAt: 0,
  obtainedAt: 0,
  grantedScopes: ['read:loans'],
  partnerId: 'p',
  issuer: 'i',
  jti: 'j',
};

describe('createMemoryTokenStore', () => {
  it('keeps an entry for its ttl on the given clock', async () => {
    const clock = fakeClock();
    const store = createMemoryTokenStore({ clock });
    await store.set('k', token, 1000);
    expect(await store.get('k')).toBe(token);
    clock.advance(999);
    expect(await store.get('k')).toBe(token);
    clock.advance(1);
    expect(await store.get('k')).toBeUndefined();
  });

  it('deletes, and does not keep entries with a ttl of 0 or less', async () => {
    const store = createMemoryTokenStore();
    await store.set('k', token, 60_000);
    await store.delete('k');
    expect(await store.get('k')).toBeUndefined();
    await store.set('k', token, 0);
    expect(await store.get('k')).toBeUndefined();
  });
});
