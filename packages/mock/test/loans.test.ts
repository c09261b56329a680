import { describe, expect, it } from 'vitest';
import { startMock } from '../src/index.js';
import { defaultStoreLimits, PartnerStore } from '../src/loans.js';
import { sharedSigningKey, tokenFor } from './helpers.js';

const ids = (store: PartnerStore, partnerId: string) =>
  store.created(partnerId, 'createLoanDraft').map((object) => object.n);

describe('loans: PartnerStore limits', () => {
  it('keeps at most maxStoredPerPartner objects of a partner, dropping that partner’s oldest', () => {
    const store = new PartnerStore(['a', 'b'], 0, 0, { ...defaultStoreLimits, maxStoredPerPartner: 3 });
    for (let n = 1; n <= 5; n += 1) store.create('a', 'createLoanDraft', { n });
    store.create('b', 'createLoanDraft', { n: 100 });
    expect(ids(store, 'a')).toEqual([3, 4, 5]);
    expect(ids(store, 'b')).toEqual([100]);
    expect(store.usage().items).toBe(4);
  });

  it('keeps at most maxStored objects over all partners, dropping the oldest of any partner', () => {
    const store = new PartnerStore(['a', 'b'], 0, 0, { ...defaultStoreLimits, maxStored: 3 });
    store.create('a', 'createLoanDraft', { n: 1 });
    store.create('b', 'createLoanDraft', { n: 2 });
    store.create('a', 'createLoanDraft', { n: 3 });
    store.create('b', 'createLoanDraft', { n: 4 });
    expect([ids(store, 'a'), ids(store, 'b')]).toEqual([[3], [2, 4]]);
  });

  it('keeps the JSON of the stored objects within maxStoredBytes, and answers the stored JSON', () => {
    const store = new PartnerStore(['a'], 0, 0, { ...defaultStoreLimits, maxStoredBytes: 250 });
    const answers = [1, 2, 3, 4].map((n) => store.create('a', 'createLoanDraft', { n, pad: 'x'.repeat(40) }));
    const size = answers[0]!.length; // {"n":1,"pad":"x…","id":"<uuid>"} — the same size for each
    expect(answers.every((json) => json.length === size)).toBe(true);
    expect(JSON.parse(answers[3]!.toString())).toMatchObject({ n: 4, id: expect.any(String) });
    const kept = Math.floor(250 / size);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(4);
    expect(store.usage()).toEqual({ items: kept, bytes: kept * size });
    expect(ids(store, 'a')).toEqual([1, 2, 3, 4].slice(4 - kept));
  });

  it('keeps nothing with limits of 0, but still answers the created object', () => {
    const store = new PartnerStore(['a'], 0, 0, { ...defaultStoreLimits, maxStored: 0 });
    expect(JSON.parse(store.create('a', 'createLoanDraft', { n: 1 }).toString()).n).toBe(1);
    expect(store.usage()).toEqual({ items: 0, bytes: 0 });
  });
});

describe('loans: memory under an endless stream of creates', () => {
  it('keeps RSS within a bound while 150 MiB of creates go through a mock limited to 4 MiB', async () => {
    const mock = await startMock({ signingKey: await sharedSigningKey(), maxStoredBytes: 4 * 1024 * 1024 });
    try {
      const token = await tokenFor(mock);
      const url = `${mock.baseUrl}/v3/partner/${mock.clients[0]!.partnerId}/loan_draft`;
      const body = JSON.stringify({ pad: 'x'.repeat(256 * 1024) });
      const send = async () => {
        const response = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        });
        await response.arrayBuffer();
        expect(response.status).toBe(201);
      };
      const batch = (count: number) => Promise.all(Array.from({ length: count }, send));
      for (let round = 0; round < 5; round += 1) await batch(10); // warm-up: heap and buffers grown
      const before = process.memoryUsage().rss;
      for (let round = 0; round < 60; round += 1) await batch(10); // 600 × 256 KiB = 150 MiB
      const growth = process.memoryUsage().rss - before;
      const usage = mock.storedUsage();
      expect(usage.bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
      // Every object has the same size: as many as fit in 4 MiB are kept, the rest were dropped.
      expect(usage.items).toBe(Math.floor((4 * 1024 * 1024) / (usage.bytes / usage.items)));
      // Without the limit RSS grew by ≈ 170 MiB here (measured); allow for garbage not yet collected.
      expect(growth, `RSS grew by ${(growth / 1048576).toFixed(0)} MiB`).toBeLessThan(100 * 1024 * 1024);
    } finally {
      await mock.close();
    }
  }, 60_000);
});
