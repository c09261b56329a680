import { defineCheck, failed, notVerified, passed } from '../../check.js';

/** Positive control: a valid token in `Authorization: Bearer` is accepted, so that refusals mean something. */
export default defineCheck({
  id: 'bearer-valid-token',
  title: 'A valid token in the Authorization header is accepted',
  category: 'bearer-header',
  severity: 'must',
  reference: 'API documentation §4.2, §5.2; RFC 6750 §2.1',
  citation:
    'Partner Lending API — Authentication and Access §5.2: "The partner sends the returned access_token in the Authorization header with the Bearer scheme on each partner API call."',
  precondition: 'the client is authorised for read:loans (GET loans is the write-free control)',
  records: 'GET loans with the valid token',
  fix: 'accept a valid, unexpired token of the right audience and scope sent as Authorization: Bearer <token>',
  async run(context) {
    if (!context.canRead)
      return notVerified('the client is not authorised for read:loans; GET loans is the write-free control');
    const exchange = await context.callApi('listLoans');
    return exchange.status === 200
      ? passed('GET loans with a valid token: 200')
      : failed(
          `expected 200 for a valid token, got ${context.describe(exchange)}\n${context.curl(exchange)}`,
        );
  },
});
