import { expectTypeOf, test } from 'vitest';
import {
  type FaultName,
  faultNames,
  type LoggedRequest,
  type MockClient,
  type MockOptions,
  type MockProfile,
  type Profile,
  type RegisterStatus,
  type RunningMock,
  startMock,
} from '../src/index.js';

test('startMock resolves to a RunningMock', () => {
  expectTypeOf(startMock).parameter(0).toEqualTypeOf<MockOptions | undefined>();
  expectTypeOf(startMock).returns.resolves.toEqualTypeOf<RunningMock>();
  expectTypeOf<RunningMock['clients']>().toEqualTypeOf<MockClient[]>();
  expectTypeOf<RunningMock['requestLog']>().returns.toEqualTypeOf<readonly LoggedRequest[]>();
  expectTypeOf<RunningMock['profile']>().toEqualTypeOf<MockProfile>();
  expectTypeOf<MockProfile>().toEqualTypeOf<Profile | 'production'>();
  expectTypeOf<RunningMock['registerStatus']>().returns.toEqualTypeOf<RegisterStatus | undefined>();
  expectTypeOf(faultNames).toEqualTypeOf<FaultName[]>();
});

test('options are closed sets where the mock has closed sets', () => {
  const faults: MockOptions = { faults: ['api-ignore-scope', 'token-reuse-jti'] };
  expectTypeOf(faults).toEqualTypeOf<MockOptions>();
  // @ts-expect-error an unknown fault name does not compile
  const unknownFault: MockOptions = { faults: ['api-ignore-everything'] };
  // @ts-expect-error only the three profiles exist
  const unknownProfile: MockOptions = { profile: 'lenient' };
  // @ts-expect-error emptyIntersection is 'invalid_scope' or 'empty-token'
  const unknownEmpty: MockOptions = { emptyIntersection: 'grant-all' };
  const keylessRegister: MockOptions = {
    profile: 'production',
    // @ts-expect-error the register needs its reader key
    register: { url: 'https://certify.example/register' },
  };
  expectTypeOf([unknownFault, unknownProfile, unknownEmpty, keylessRegister]).toEqualTypeOf<MockOptions[]>();
});
