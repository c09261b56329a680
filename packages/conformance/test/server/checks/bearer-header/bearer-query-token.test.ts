import { createServer } from 'node:http';
import { startMock } from '@partner-lending/mock';
import { describe, expect, it } from 'vitest';
import { runConformance } from '../../../../src/index.js';
import { sharedSigningKey } from '../../../helpers.js';

// An API that answers every request without credentials with an HTML 500 page (a framework's default
// error page): the missing-header rule is broken, and that is judged once, by the checks it concerns.
describe('bearer-query-token judges only whether the query token was honoured', () => {
  it('an HTML 500 for a request without a header is not a query token honoured', async () => {
    const mock = await startMock({ signingKey: await sharedSigningKey() });
    const api = createServer((req, res) => {
      if (req.headers.authorization === undefined) {
        res.writeHead(500, { 'content-type': 'text/html' });
        res.end('<html><body><h1>Internal Server Error</h1></body></html>');
        return;
      }
      mock.handle('api', req, res);
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    try {
      const client = mock.clients[0]!;
      const report = await runConformance({
        authUrl: mock.authUrl,
        baseUrl: `http://127.0.0.1:${(api.address() as { port: number }).port}`,
        audience: mock.audience,
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        only: ['bearer-query-token', 'bearer-missing-header', 'spec-no-server-errors'],
      });
      const status = Object.fromEntries(report.checks.map((check) => [check.id, check.status]));
      expect(status).toEqual({
        'bearer-missing-header': 'failed',
        'bearer-query-token': 'passed',
        'spec-no-server-errors': 'failed',
      });
      expect(report.checks.find((check) => check.id === 'bearer-query-token')!.details).toContain(
        'not honoured (a server error, judged by spec-no-server-errors): 500',
      );
    } finally {
      api.close();
      await mock.close();
    }
  });
});
