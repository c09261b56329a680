import { describe, expectTypeOf, it } from 'vitest';
import { createPartnerClient } from '../src/index.js';

const client = createPartnerClient({ baseUrl: 'http://127.0.0.1:1' });

describe('typed paths', () => {
  it('accepts the loans path with partner_id, limit and offset', () => {
    const result = client.GET('/v3/partner/{partner_id}/loans', {
      params: { path: { partner_id: 'p1' }, query: { limit: 10, offset: 0 } },
    });
    type Data = Awaited<typeof result>['data'];
    expectTypeOf<Data>().toEqualTypeOf<Record<string, unknown>[] | Record<string, unknown> | undefined>();
  });

  it('types the create bodies as open JSON objects', () => {
    const result = client.POST('/v3/partner/{partner_id}/repayments', {
      params: { path: { partner_id: 'p1' } },
      body: { amount: 10, anything: ['goes'] },
    });
    expectTypeOf<Awaited<typeof result>['data']>().toEqualTypeOf<Record<string, unknown> | undefined>();
  });

  it('rejects what the spec does not allow', () => {
    // @ts-expect-error the path does not exist in the spec (loan, not loans)
    client.GET('/v3/partner/{partner_id}/loan', { params: { path: { partner_id: 'p1' } } });
    // @ts-expect-error partner_id is a required path parameter
    client.GET('/v3/partner/{partner_id}/loans', { params: { path: {} } });
    // @ts-expect-error params (with partner_id) are required
    client.GET('/v3/partner/{partner_id}/loans');
    client.GET('/v3/partner/{partner_id}/loans', {
      // @ts-expect-error limit is an integer, not a string
      params: { path: { partner_id: 'p1' }, query: { limit: '10' } },
    });
    // @ts-expect-error the loans path has no POST
    client.POST('/v3/partner/{partner_id}/loans', { params: { path: { partner_id: 'p1' } } });
    client.POST('/v3/partner/{partner_id}/journals', {
      params: { path: { partner_id: 'p1' } },
      // @ts-expect-error a create body is an object, not an array
      body: [1, 2],
    });
  });
});
