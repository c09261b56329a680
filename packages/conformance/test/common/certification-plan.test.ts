import { createHash } from 'node:crypto';
import { operations } from '@partner-lending/spec';
import { describe, expect, it } from 'vitest';
import { canonicalJson, certificationPlan, definePlan, planDigest, scenarioJudges } from '../../src/index.js';

describe('the certification plan', () => {
  it('the default plan (v2): the four operations of the spec with their scopes, all four scopes, every scenario with the check judging it, a renewal, four decisive should checks', () => {
    expect(certificationPlan.id).toBe('partner-lending-default-v2');
    expect(certificationPlan.operations).toEqual(
      Object.entries(operations)
        .filter(([, operation]) => operation.server === 'api')
        .map(([operationId, operation]) => ({ operationId, scope: operation.scope })),
    );
    expect(certificationPlan.scopes).toEqual([
      'read:loans',
      'create:loan_draft',
      'create:journal_update',
      'create:repayment',
    ]);
    expect(certificationPlan.scenarios).toEqual(['revocation', 'throttle', 'unavailable', 'narrowed-grant']);
    expect(certificationPlan.renewal).toBe(true);
    expect(certificationPlan.decisiveShouldChecks).toEqual([
      'client-token-reuse',
      'client-retry-after',
      'client-revocation-recovery',
      'client-granted-scope-respected',
    ]);
    // Each scenario names the check that judges what the client did with it: in the digest.
    expect(certificationPlan.handledBy).toEqual({
      revocation: ['client-revocation-recovery'],
      throttle: ['client-retry-after'],
      // Retry-After counts a concurrent client's calls of the same moment as in flight: the re-sent create
      // itself is client-create-not-replayed's.
      unavailable: ['client-retry-after', 'client-create-not-replayed'],
      'narrowed-grant': ['client-granted-scope-respected'],
      renewal: ['client-no-expired-token'],
    });
    expect(canonicalJson(certificationPlan)).toContain(
      '"handledBy":{"narrowed-grant":["client-granted-scope-respected"]',
    );
    // Every judging check decides approval through its scenario; the should ones are decisive checks too,
    // but client-create-not-replayed, which decides through the unavailable scenario only.
    for (const check of Object.values(scenarioJudges).flat())
      expect(
        [...certificationPlan.decisiveShouldChecks, 'client-no-expired-token', 'client-create-not-replayed'],
        check,
      ).toContain(check);
  });

  it('a plan with fewer scenarios keeps the judges of its own only; one without handledBy gets the defaults; a judge must be a client check', () => {
    const { digest: _digest, handledBy: _handledBy, ...rest } = certificationPlan;
    const fewer = definePlan({
      ...rest,
      scenarios: ['throttle'],
      renewal: false,
      handledBy: { ...certificationPlan.handledBy },
    });
    expect(fewer.handledBy).toEqual({ throttle: ['client-retry-after'] });
    expect(definePlan({ ...rest }).handledBy).toEqual(certificationPlan.handledBy);
    expect(() => definePlan({ ...rest, handledBy: { revocation: ['token-endpoint'] } })).toThrow(
      'handledBy.revocation: "token-endpoint" is not a client check id',
    );
  });

  it('its digest is the SHA-256 of its canonical JSON, and any change changes it', () => {
    const { digest, ...rest } = certificationPlan;
    expect(digest).toBe(createHash('sha256').update(canonicalJson(rest)).digest('hex'));
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 'x' }] })).toBe('{"a":[{"c":"x","d":2}],"b":1}');
    expect(planDigest(certificationPlan)).toBe(digest);
    const relaxed = definePlan({ ...rest, decisiveShouldChecks: ['client-token-reuse'] });
    expect(relaxed.digest).not.toBe(digest);
    expect(definePlan({ ...rest }).digest).toBe(digest);
  });

  it('refuses a plan that is not the API’s or cannot be met, saying what to change', () => {
    const { digest: _digest, ...rest } = certificationPlan;
    expect(() => definePlan({ ...rest, scopes: ['read:loans'] })).toThrow(
      "certification plan: operation createLoanDraft needs scope create:loan_draft, which the plan's scopes do not grant",
    );
    expect(() =>
      definePlan({ ...rest, operations: [{ operationId: 'deleteLoan' as never, scope: 'read:loans' }] }),
    ).toThrow('certification plan: operation "deleteLoan" is not one of the API\'s');
    expect(() => definePlan({ ...rest, ttlSeconds: 0 })).toThrow('ttlSeconds must be a whole number');
    expect(() => definePlan({ ...rest, id: 'a plan' })).toThrow('id "a plan" must be 1–64 letters');
  });
});
