import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type ClientConformanceRun, runClientConformance } from '../../src/index.js';

const clients = fileURLToPath(new URL('../clients/', import.meta.url));

function certify(command: string[]): Promise<ClientConformanceRun> {
  return runClientConformance({
    command,
    // 3-s tokens for 9 s (the short phase), then long ones: 14 s cross both.
    env: { ...process.env, JOURNEY_SECONDS: '14' },
    ttlSeconds: 3,
    stdio: 'pipe',
    timeoutSeconds: 60,
  });
}

const byStatus = (run: ClientConformanceRun, status: string) =>
  run.report.checks.filter((check) => check.status === status).map((check) => check.id);

// Journeys this project did not write the HTTP or OAuth code of: curl in a shell script, and the
// simple-oauth2 library. Correct peers: no check may fail; what they never do is not verified.
describe('client mode against third-party clients', () => {
  it('curl in a shell script and simple-oauth2 pass every must check; what they never do is not verified', async () => {
    const [curl, oauth2] = await Promise.all([
      certify([`${clients}curl-journey.sh`]),
      certify([process.execPath, `${clients}simple-oauth2-journey.mjs`]),
    ]);
    for (const run of [curl, oauth2]) {
      expect(run.report.journey.exitCode, run.report.journey.command.join(' ')).toBe(0);
      expect(byStatus(run, 'failed'), run.report.journey.command.join(' ')).toEqual([]);
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
      // Neither journey creates anything nor calls concurrently: those rules are not verified, not passed.
      expect(byStatus(run, 'skipped')).toEqual(
        expect.arrayContaining(['client-single-flight', 'client-create-not-replayed']),
      );
    }
    // simple-oauth2 authenticates with HTTP Basic, curl with form fields: the stage reads both.
    const auth = (run: ClientConformanceRun) =>
      new Set(run.session.exchanges.flatMap((e) => (e.form ? [e.form.clientAuth] : [])));
    expect([...auth(oauth2)]).toEqual(['basic']);
    expect([...auth(curl)]).toEqual(['body']);
  }, 150_000);
});
