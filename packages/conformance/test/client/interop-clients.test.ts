import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type ClientConformanceRun, certificationPlan, runClientConformance } from '../../src/index.js';

const clients = fileURLToPath(new URL('../clients/', import.meta.url));

/** A certification run under the default plan: 5-s tokens for the first 15 s, then 3600-s ones; 20 s cross both. */
function certify(command: string[]): Promise<ClientConformanceRun> {
  return runClientConformance({
    command,
    env: { ...process.env, JOURNEY_SECONDS: '20' },
    certify: true,
    plan: certificationPlan,
    stdio: 'pipe',
    timeoutSeconds: 90,
  });
}

const byStatus = (run: ClientConformanceRun, status: string) =>
  run.report.checks.filter((check) => check.status === status).map((check) => check.id);

// Journeys this project did not write the HTTP or OAuth code of: curl in a shell script, and the
// simple-oauth2 library. Correct peers: certified under the default plan; what they never do (calls at
// once) is not verified.
describe('client mode against third-party clients', () => {
  it('curl in a shell script and simple-oauth2 certify under the default plan, every scenario handled; what they never do is not verified', async () => {
    const [curl, oauth2] = await Promise.all([
      certify([`${clients}curl-journey.sh`]),
      certify([process.execPath, `${clients}simple-oauth2-journey.mjs`]),
    ]);
    for (const run of [curl, oauth2]) {
      expect(run.report.journey.exitCode, run.report.journey.command.join(' ')).toBe(0);
      expect(byStatus(run, 'failed'), run.report.journey.command.join(' ')).toEqual([]);
      expect(
        run.report.certification,
        JSON.stringify(run.report.checks.filter((c) => c.status !== 'passed').map((c) => [c.id, c.details])),
      ).toEqual({ passed: true, reasons: [] });
      for (const scenario of run.report.coverage.scenarios)
        expect(scenario, scenario.id).toMatchObject({ played: true, met: true, outcome: 'handled' });
      expect(byStatus(run, 'passed')).toEqual(
        expect.arrayContaining([
          'client-bearer-header',
          'client-token-not-in-url',
          'client-secret-confined',
          'client-no-expired-token',
          'client-token-reuse',
          'client-audience',
          'client-own-partner',
          'client-request-shape',
        ]),
      );
      // Neither journey calls concurrently: single flight is not verified, not passed.
      expect(byStatus(run, 'skipped')).toEqual(['client-single-flight']);
    }
    // simple-oauth2 authenticates with HTTP Basic, curl with form fields: the stage reads both.
    const auth = (run: ClientConformanceRun) =>
      new Set(run.session.exchanges.flatMap((e) => (e.form ? [e.form.clientAuth] : [])));
    expect([...auth(oauth2)]).toEqual(['basic']);
    expect([...auth(curl)]).toEqual(['body']);
  }, 180_000);
});
