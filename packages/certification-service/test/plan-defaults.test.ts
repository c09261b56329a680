import { describe, expect, it } from 'vitest';
import { defaultPlan, makePlan } from '../src/plan/plan.js';

// An operator's plan file fills what it leaves out from the default plan. Its decisive checks too —
// less the checks that only judge a scenario the plan does not play: such a check could never be
// verified under the plan, and every run of it would be refused approval for it.

describe("a plan's decisive checks", () => {
  it('the default plan makes the judge of every scenario it plays decisive (the control)', () => {
    expect(defaultPlan.scenarios).toContain('narrowed-grant');
    expect(defaultPlan.decisiveShouldChecks).toContain('client-granted-scope-respected');
    expect(makePlan({ id: 'same' }).decisiveShouldChecks).toEqual(defaultPlan.decisiveShouldChecks);
  });

  it('a plan without the narrowed grant does not make the granted-scope check decisive, and keeps the rest', () => {
    const plan = makePlan({ id: 'no-narrowing', scenarios: ['revocation', 'throttle', 'unavailable'] });
    expect(plan.decisiveShouldChecks).not.toContain('client-granted-scope-respected');
    expect(plan.decisiveShouldChecks).toEqual(
      defaultPlan.decisiveShouldChecks.filter((id) => id !== 'client-granted-scope-respected'),
    );
    // A check that judges no scenario (token reuse) stays decisive without any scenario.
    const none = makePlan({ id: 'no-faults', scenarios: [] });
    expect(none.decisiveShouldChecks).toContain('client-token-reuse');
    expect(none.decisiveShouldChecks).not.toContain('client-revocation-recovery');
  });

  it("an operator's own list is kept as written", () => {
    const plan = makePlan({
      id: 'explicit',
      scenarios: ['revocation'],
      decisiveShouldChecks: ['client-granted-scope-respected'],
    });
    expect(plan.decisiveShouldChecks).toEqual(['client-granted-scope-respected']);
  });
});
