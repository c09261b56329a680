// The production switch in the types: production addresses must be written out.
import {
  createPartnerClient,
  type NotApprovedForProductionError,
  type PartnerApiErrorCode,
  type PartnerClient,
  type ProductionClientOptions,
  type TokenRequestError,
} from '@partner-lending/sdk';
import { describe, expectTypeOf, it } from 'vitest';

describe('environment: production', () => {
  it('compiles with both production addresses', () => {
    const client = createPartnerClient({
      environment: 'production',
      authUrl: 'https://auth.partner-lending.example',
      baseUrl: 'https://api.partner-lending.example',
    });
    expectTypeOf(client).toEqualTypeOf<PartnerClient>();
    expectTypeOf<ProductionClientOptions['authUrl']>().toEqualTypeOf<string>();
    expectTypeOf<ProductionClientOptions['baseUrl']>().toEqualTypeOf<string>();
  });

  it('does not compile without them, or with another environment name', () => {
    // @ts-expect-error production needs authUrl
    createPartnerClient({ environment: 'production', baseUrl: 'https://api.partner-lending.example' });
    // @ts-expect-error production needs baseUrl
    createPartnerClient({ environment: 'production', authUrl: 'https://auth.partner-lending.example' });
    // @ts-expect-error production needs both
    createPartnerClient({ environment: 'production' });
    // @ts-expect-error the environments are 'staging' and 'production'
    createPartnerClient({ environment: 'prod' });
    // staging (the default) may still take everything from the PARTNER_* variables
    createPartnerClient({ environment: 'staging' });
    createPartnerClient();
  });

  it('has its own error class and code, a TokenRequestError', () => {
    expectTypeOf<NotApprovedForProductionError['code']>().toEqualTypeOf<'ERR_NOT_APPROVED_FOR_PRODUCTION'>();
    expectTypeOf<'ERR_NOT_APPROVED_FOR_PRODUCTION'>().toExtend<PartnerApiErrorCode>();
    expectTypeOf<NotApprovedForProductionError>().toExtend<TokenRequestError>();
    expectTypeOf<NotApprovedForProductionError['errorDescription']>().toEqualTypeOf<string | undefined>();
  });
});
