import { describe, expectTypeOf, it } from 'vitest';
import {
  type CheckResult,
  type ClientConformanceRun,
  type ClientReport,
  type ConformanceError,
  type ConformanceErrorCode,
  type ConformanceOptions,
  certificationPlan,
  type DigestedPlan,
  type Report,
  runClientConformance,
  runConformance,
  runConformanceDetailed,
  type TargetInfo,
  type Verification,
  verdictOf,
  verifyAttestation,
  verifyDecision,
} from '../src/index.js';

describe('public types of client verdicts and attestations', () => {
  it('a client report says where it comes from and what the journey exercised', () => {
    expectTypeOf<ClientReport['provenance']['source']>().toEqualTypeOf<'live' | 'rejudged' | 'service'>();
    expectTypeOf<ClientReport['operations'][number]['exercised']>().toEqualTypeOf<boolean>();
    expectTypeOf(verifyAttestation).returns.toEqualTypeOf<Verification>();
    // @ts-expect-error the session's bytes are a Buffer, not a parsed session
    verifyAttestation({ payloadType: '', payload: '', signatures: [] }, [], { kind: 'session' });
  });
});

describe('public types', () => {
  it('runConformance returns the JSON report of the contract', () => {
    expectTypeOf(runConformance).returns.resolves.toEqualTypeOf<Report>();
    expectTypeOf(runConformanceDetailed).returns.resolves.toEqualTypeOf<{
      report: Report;
      target: TargetInfo;
    }>();
    expectTypeOf<Report['schemaVersion']>().toEqualTypeOf<3>();
    expectTypeOf<ClientReport['schemaVersion']>().toEqualTypeOf<3>();
    expectTypeOf<ClientReport['mode']>().toEqualTypeOf<'client'>();
    expectTypeOf(runClientConformance).returns.resolves.toEqualTypeOf<ClientConformanceRun>();
    expectTypeOf<CheckResult['status']>().toEqualTypeOf<'passed' | 'failed' | 'skipped' | 'errored'>();
    expectTypeOf<CheckResult['severity']>().toEqualTypeOf<'must' | 'should'>();
  });

  it('takes the embedded mock options, with fault names checked at compile time', () => {
    const ok: ConformanceOptions = { mock: { profile: 'rfc9068', faults: ['api-ignore-scope'] } };
    expectTypeOf(ok).toEqualTypeOf<ConformanceOptions>();
    // @ts-expect-error an unknown fault name does not compile
    const bad: ConformanceOptions = { mock: { faults: ['api-be-nice'] } };
    void bad;
    // @ts-expect-error the profile is 'deployed' or 'rfc9068'
    const badProfile: ConformanceOptions = { mock: { profile: 'staging' } };
    void badProfile;
  });

  it('takes environment variables as they are (string | undefined)', () => {
    const fromEnv: ConformanceOptions = {
      authUrl: process.env.PARTNER_AUTH_URL,
      baseUrl: process.env.PARTNER_BASE_URL,
      clientId: process.env.PARTNER_CLIENT_ID,
      clientSecret: process.env.PARTNER_CLIENT_SECRET,
    };
    expectTypeOf(fromEnv.authUrl).toEqualTypeOf<string | undefined>();
  });

  it('the report of schemaVersion 3 carries evidence, and the verdict is typed', () => {
    expectTypeOf<CheckResult['evidence'][number]['status']>().toEqualTypeOf<number>();
    expectTypeOf<Report['mode']>().toEqualTypeOf<'server'>();
    expectTypeOf<Report['certify']>().toEqualTypeOf<boolean>();
    expectTypeOf(verdictOf).returns.toEqualTypeOf<{ code: 0 | 1; word: 'PASS' | 'FAIL'; text: string }>();
    const withSecond: ConformanceOptions = { otherPartnerId: 'p2', certify: true, listen: '10.0.0.5' };
    void withSecond;
    // @ts-expect-error the second partner's secret is never a plain option name like a flag: it is otherClientSecret
    const wrong: ConformanceOptions = { otherSecret: 'x' };
    void wrong;
  });

  it('errors carry a stable code union', () => {
    expectTypeOf<ConformanceError['code']>().toEqualTypeOf<ConformanceErrorCode>();
    expectTypeOf<'ERR_UNREACHABLE'>().toMatchTypeOf<ConformanceErrorCode>();
  });

  it('the certification plan, the coverage and a decision are typed for the service', () => {
    expectTypeOf(certificationPlan.digest).toEqualTypeOf<string>();
    expectTypeOf<ClientReport['coverage']['operations'][number]>().toEqualTypeOf<{
      operationId: string;
      calls: number;
      succeeded: number;
    }>();
    expectTypeOf<ClientReport['certification']>().toEqualTypeOf<
      { passed: boolean; reasons: string[] } | undefined
    >();
    expectTypeOf(verifyDecision).returns.toMatchTypeOf<{ ok: boolean; problems: string[] }>();
    // @ts-expect-error a plan's operations are the spec's operationIds, not free text
    const wrong: DigestedPlan['operations'][number] = { operationId: 'deleteLoan', scope: 'read:loans' };
    void wrong;
  });
});
