// The false-positive bed: 24 simulated hours of each client profile (the documented defaults of real
// libraries, a fleet) with the gate's faults, judged in the batches reporters send: no finding. The same
// generator with a broken client (the controls) is flagged, so the bed could fail.
import { describe, expect, it } from 'vitest';
import { createPartnerJudge, type Finding, type Thresholds } from '../src/regressions/windows.js';
import {
  type ClientFault,
  type ClientProfile,
  clientProfiles,
  productionTraffic,
} from './support/production-traffic.js';

function judgeDay(
  profile: ClientProfile,
  fault?: ClientFault,
  seed = 7,
  thresholds: Partial<Thresholds> = {},
) {
  const traffic = productionTraffic({ profile, ...(fault ? { fault } : {}), seed });
  const judge = createPartnerJudge('partner-a', { thresholds });
  const findings: Finding[] = [];
  for (const batch of traffic.batches) findings.push(...judge.observe(batch));
  const state = judge.state() as { judged: number };
  return { findings, exchanges: traffic.exchanges, judged: state.judged };
}

const line = (name: string, result: ReturnType<typeof judgeDay>) =>
  `${name.padEnd(58)} ${String(result.exchanges).padStart(7)} exchanges, ${result.judged} judged, ${result.findings.length} finding${result.findings.length === 1 ? '' : 's'}${result.findings.length > 0 ? `: ${result.findings.map((f) => f.check).join(', ')}` : ''}`;

describe('production checks: no finding on correct clients over 24 h', () => {
  for (const profile of clientProfiles)
    it(`${profile.name} (${profile.source})`, () => {
      for (const seed of [7, 8]) {
        const result = judgeDay(profile, undefined, seed);
        console.log(line(`${profile.name} #${seed}`, result));
        expect(result.findings.map((f) => `${f.check}: ${f.detail}`)).toEqual([]);
        expect(result.exchanges).toBeGreaterThan(20_000);
      }
    });
});

describe('controls: broken clients on the same generator are flagged', () => {
  const sdk = clientProfiles[0]!;
  const go = clientProfiles[4]!;
  const cases: [string, ClientProfile, ClientFault, string][] = [
    ['a token per call', sdk, { tokenPerCall: true }, 'client-token-reuse'],
    ['the revoked token sent again', go, { resendRevoked: true }, 'client-revocation-recovery'],
    ['Retry-After ignored', go, { ignoreRetryAfter: true }, 'client-retry-after'],
  ];
  for (const [name, profile, fault, check] of cases)
    it(`${name}: ${check}`, () => {
      const result = judgeDay(profile, fault);
      console.log(line(`control: ${name} (${profile.name})`, result));
      expect(result.findings.map((f) => f.check)).toContain(check);
      // One finding per episode, not one per exchange.
      expect(result.findings.filter((f) => f.check === check).length).toBeLessThanOrEqual(24);
    });
});

describe('the bed reaches the edges the tolerances are for', () => {
  it('with the grace and in-flight allowances at zero, a leeway-0 client and the gate’s 429s are flagged', () => {
    const openidClient = clientProfiles[1]!;
    const result = judgeDay(openidClient, undefined, 7, {
      expiryGraceMs: 0,
      inFlightMs: 0,
      retryAfterTolerance: 0,
    });
    console.log(line(`no allowances: ${openidClient.name}`, result));
    const checks = new Set(result.findings.map((f) => f.check));
    // Renewing at expires_in on a clock behind the gate's, its last calls arrive a little late…
    expect(checks).toContain('client-no-expired-token');
    // …and calls set out before a 429's answer arrive after it.
    expect(checks).toContain('client-retry-after');
  });
});
