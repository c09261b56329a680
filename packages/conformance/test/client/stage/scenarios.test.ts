import { scopes } from '@partner-lending/spec';
import { describe, expect, it } from 'vitest';
import { playScenarios } from '../../../src/index.js';

describe('the narrowed grant of the scenario plan', () => {
  it('with every scope authorised, the first request asking beyond read:loans is narrowed once, then grants are whole again', () => {
    const player = playScenarios(new Set(['narrowed-grant']), scopes);
    // read:loans alone is not narrowed (nothing to take away), and does not use the step up.
    expect(player.tokenRequested(['read:loans'], 10, 1)).toBeUndefined();
    // Every scope asked: granted read:loans only.
    expect(player.tokenRequested([...scopes], 20, 2)).toEqual(['read:loans']);
    expect(player.records.find((item) => item.name === 'narrowed-grant')).toMatchObject({
      firedAt: 20,
      seq: 2,
    });
    // Once: the next request gets what it asks.
    expect(player.tokenRequested([...scopes], 30, 3)).toBeUndefined();
  });

  it('a request with no scope parameter is narrowed too, and one asking only beyond read:loans is refused (empty grant)', () => {
    expect(playScenarios(new Set(['narrowed-grant']), scopes).tokenRequested([], 5, 1)).toEqual([
      'read:loans',
    ]);
    expect(
      playScenarios(new Set(['narrowed-grant']), scopes).tokenRequested(['create:repayment'], 5, 1),
    ).toEqual([]);
  });

  it('negative controls: a client authorised for fewer scopes is narrowed by its authorisation, not by the stage; the step off narrows nothing', () => {
    const partial = playScenarios(new Set(['narrowed-grant']), ['read:loans', 'create:loan_draft']);
    expect(partial.tokenRequested(['create:repayment'], 5, 1)).toBeUndefined();
    expect(partial.records.find((item) => item.name === 'narrowed-grant')?.firedAt).toBe(5);
    const off = playScenarios(new Set(), scopes);
    expect(off.tokenRequested([...scopes], 5, 1)).toBeUndefined();
  });
});
