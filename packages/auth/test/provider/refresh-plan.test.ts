import { describe, expect, it } from 'vitest';
import { planRefresh, type RefreshWindows } from '../../src/provider/refresh-plan.js';

const defaults: RefreshWindows = {
  softWindowMs: 60_000,
  softWindowRatio: 0.1,
  hardWindowMs: 5_000,
  jitterRatio: 0.2,
};
const at = (obtainedAt: number, lifetimeMs: number) => ({ obtainedAt, expiresAt: obtainedAt + lifetimeMs });

describe('planRefresh (a pure function: no provider, no clock)', () => {
  it('a 12-hour token: refreshed 10–12 % of its life ahead in the background, callers wait only in the last 5 s', () => {
    const token = at(1_000_000_000_500, 43_200_000);
    const low = planRefresh(token, defaults, () => 0);
    const high = planRefresh(token, defaults, () => 0.999_999);
    expect(token.expiresAt - low.refreshAt).toBe(4_320_000);
    expect(token.expiresAt - high.refreshAt).toBeCloseTo(5_184_000, -1);
    expect(token.expiresAt - low.hardAt).toBe(5_000);
    expect(low.renewAt).toBe(0);
  });

  it('a short token: windows scale with the lifetime (hard 5 %, soft at most 12 %)', () => {
    const token = at(1_000_000_000_250, 20_000); // exp not on a whole second
    const plan = planRefresh(token, defaults, () => 0.5);
    expect(token.expiresAt - plan.hardAt).toBe(1_000);
    expect(token.expiresAt - plan.refreshAt).toBeLessThanOrEqual(2_400);
    expect(token.expiresAt - plan.refreshAt).toBeGreaterThan(2_000);
  });

  it('a whole-second token of at most 6 s is renewed at its exp, not ahead of it', () => {
    const token = at(1_000_000_000_000, 2_000);
    const plan = planRefresh(token, defaults, () => 0.5);
    expect(plan.renewAt).toBe(token.expiresAt);
    expect(plan.refreshAt).toBe(plan.hardAt);
    // 5 % of 2 s is 100 ms, less than a busy host's stall: the floor (300 ms) holds.
    expect(token.expiresAt - plan.hardAt).toBe(300);
    // The same lifetime off the whole second is not aligned: it gets a soft window.
    expect(planRefresh(at(1_000_000_000_300, 2_000), defaults, () => 0.5).renewAt).toBe(0);
  });

  it('the hard window has a floor of 300 ms, at most a fifth of the lifetime and never above hardWindowMs', () => {
    expect(at(0, 2_000).expiresAt - planRefresh(at(0, 2_000), defaults, () => 0).hardAt).toBe(300);
    expect(at(0, 800).expiresAt - planRefresh(at(0, 800), defaults, () => 0).hardAt).toBe(160);
    const small = { ...defaults, hardWindowMs: 50 };
    expect(at(0, 2_000).expiresAt - planRefresh(at(0, 2_000), small, () => 0).hardAt).toBe(50);
    // A long token keeps 5 % up to hardWindowMs (the floor does not lower it).
    expect(at(0, 60_000).expiresAt - planRefresh(at(0, 60_000), defaults, () => 0).hardAt).toBe(3_000);
  });

  it("a whole-second token cut short by the server's rounding keeps the safety window of the seconds it was issued for", () => {
    // A 1-s token asked for at x.990 s: exp = floor + 1, so it lives 10 ms. Its window is 200 ms (a fifth
    // of 1 s), so it is not handed out but renewed at its exp.
    const late = at(1_000_000_000_990, 10);
    const plan = planRefresh(late, defaults, () => 0.5);
    expect(late.expiresAt - plan.hardAt).toBe(200);
    expect(plan.hardAt).toBeLessThan(late.obtainedAt);
    expect(plan.renewAt).toBe(late.expiresAt);
    // Control: the same 10 ms off the whole second is sized on what it has (2 ms), as before.
    const offSecond = at(1_000_000_000_980, 10);
    expect(offSecond.expiresAt - planRefresh(offSecond, defaults, () => 0.5).hardAt).toBe(2);
  });

  it('the jitter widens the soft window by up to jitterRatio, drawn from the random source', () => {
    const token = at(0, 3_600_000);
    const draws = [0, 0.25, 0.5, 0.75].map(
      (r) => token.expiresAt - planRefresh(token, defaults, () => r).refreshAt,
    );
    expect(draws).toEqual([360_000, 378_000, 396_000, 414_000]);
  });
});
