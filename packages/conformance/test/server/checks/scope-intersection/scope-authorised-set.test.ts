import { type MockClient, startMock } from '@partner-lending/mock';
import { describe, expect, it } from 'vitest';
import { runConformance } from '../../../../src/server/run.js';
import { sharedSigningKey } from '../../../helpers.js';

const client: MockClient = {
  partnerId: 'partner-two-scopes',
  clientId: 'two-scopes-client',
  clientSecret: 'two-scopes-secret-0123456789',
  authorizedScopes: ['read:loans', 'create:loan_draft'],
};

describe('scope-authorised-set', () => {
  it('fails when the server grants fewer scopes than --expect-scopes says the console lists', async () => {
    const report = await runConformance({
      only: ['scope-authorised-set'],
      mock: { clients: [client], signingKey: await sharedSigningKey() },
      expectScopes: ['read:loans', 'create:loan_draft', 'create:repayment'],
    });
    expect(report.checks[0]).toMatchObject({ status: 'failed' });
    expect(report.checks[0]!.details).toContain(
      'expected the authorised {read:loans create:loan_draft create:repayment}, got {read:loans create:loan_draft}',
    );
  });

  it('without --expect-scopes against a target, learns A, says it was not compared and reports the omitted scope', async () => {
    const mock = await startMock({ clients: [client], signingKey: await sharedSigningKey() });
    try {
      const report = await runConformance({
        only: ['scope-authorised-set'],
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        clientId: client.clientId,
        clientSecret: client.clientSecret,
      });
      expect(report.checks[0]).toMatchObject({ status: 'passed' });
      expect(report.checks[0]!.details).toContain('(not compared: no --expect-scopes)');
      expect(report.checks[0]!.details).toContain('no scope requested: granted {');
    } finally {
      await mock.close();
    }
  });
});
