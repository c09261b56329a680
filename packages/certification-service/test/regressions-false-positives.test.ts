// The false-positive bed: 24 simulated hours of each client profile (the documented defaults of real
// libraries, a fleet) with the gate's faults, judged in the batches reporters send: no finding. The same
// generator with a broken client (the controls) is flagged, so the bed could fail.
import { describe, expect, it } from 'vitest';
import { createPartnerJudge, type Finding } from '../src/regressions/windows.js';
import {
  type ClientFault,
  type ClientProfile,
  clientProfiles,
  productionTraffic,
} from './support/production-traffic.js';

function judgeDay(profile: ClientProfile, fault?: ClientFault, seed = 7) {
  const traffic = productionTraffic({ profile, ...(fault ? { fault } : {}), seed });
  const judge = createPartnerJudge('partner-a');
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
