import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ClientConformanceRun, runClientConformance } from '../../src/index.js';

// Partner programs on mainstream OAuth libraries, in three languages, at their defaults (renewal
// windows included): Go's golang.org/x/oauth2/clientcredentials (10 s ahead, renewals serialised,
// HTTP Basic), Python's Authlib (60 s ahead by default, and 300 s: the top of the range; HTTP Basic),
// Ruby's oauth2 gem (30 s ahead, HTTP Basic), Java 17's java.net.http with renewal at expiry (a window
// of 0 s, renewals behind a lock that re-checks the cache, form credentials). Installed from Debian and the machine's package index
// (`pnpm prerequisites --install`); the Python interpreter with Authlib is PARTNER_TEST_PYTHON (which
// `pnpm test` sets to the venv that command made), default python3.
const clients = fileURLToPath(new URL('../clients/', import.meta.url));
const python = process.env.PARTNER_TEST_PYTHON ?? 'python3';
const goBinary = join(tmpdir(), `go-x-oauth2-journey-${process.pid}`);

function need(what: string, command: string, args: string[], install: string): void {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 30_000 });
  } catch {
    throw new Error(`${what} is missing: ${install} (pnpm prerequisites --install installs it)`);
  }
}

beforeAll(() => {
  need(
    'Go with golang.org/x/oauth2',
    'go',
    ['version'],
    'apt-get install golang-go golang-golang-x-oauth2-dev',
  );
  need(
    'Authlib for Python',
    python,
    ['-c', 'import authlib, requests'],
    'pip install authlib requests (then PARTNER_TEST_PYTHON=that python)',
  );
  need('the oauth2 gem for Ruby', 'ruby', ['-e', 'require "oauth2"'], 'apt-get install ruby ruby-oauth2');
  need('Java 17', 'java', ['-version'], 'apt-get install openjdk-17-jdk-headless');
  const cache = join(tmpdir(), 'partner-lending-go-cache');
  mkdirSync(cache, { recursive: true });
  // GOPATH mode against Debian's packaged sources: nothing is downloaded.
  execFileSync('go', ['build', '-o', goBinary, '.'], {
    cwd: join(clients, 'go-x-oauth2'),
    env: { ...process.env, GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOCACHE: cache, GOFLAGS: '' },
    stdio: 'pipe',
    timeout: 120_000,
  });
}, 150_000);

function certify(command: string[], env: Record<string, string> = {}): Promise<ClientConformanceRun> {
  return runClientConformance({
    command,
    // 3-s tokens for the first 9 s, then 3600-s ones: 14 s cross both phases.
    env: { ...process.env, JOURNEY_SECONDS: '14', ...env },
    ttlSeconds: 3,
    certify: true,
    stdio: 'pipe',
    timeoutSeconds: 60,
  });
}

const statusOf = (run: ClientConformanceRun, id: string) =>
  run.report.checks.find((check) => check.id === id)?.status;
const byStatus = (run: ClientConformanceRun, status: string) =>
  run.report.checks.filter((check) => check.status === status).map((check) => check.id);

describe('client mode against mainstream OAuth libraries in Go, Python and Ruby', () => {
  it('each correct program passes every check it reaches under --certify; a token per call fails client-token-reuse', async () => {
    const [go, authlib60, authlib300, ruby, java, goPerCall, authlibPerCall] = await Promise.all([
      certify([goBinary]),
      certify([python, `${clients}authlib-journey.py`]),
      certify([python, `${clients}authlib-journey.py`], { LEEWAY: '300' }),
      certify(['ruby', `${clients}ruby-oauth2-journey.rb`]),
      certify(['java', `${clients}JavaJourney.java`], { WINDOW: '0' }),
      certify([goBinary], { TOKEN_PER_CALL: '1' }),
      certify([python, `${clients}authlib-journey.py`], { TOKEN_PER_CALL: '1' }),
    ]);
    for (const [name, run] of Object.entries({ go, authlib60, authlib300, ruby, java })) {
      expect(run.report.journey.exitCode, `${name}: ${run.report.journey.note ?? ''}`).toBe(0);
      expect(byStatus(run, 'failed'), name).toEqual([]);
      // Certified: no must check failed or went unverified, and the reuse rule was judged, not skipped.
      expect(run.report.notVerified, name).toEqual([]);
      expect(statusOf(run, 'client-token-reuse'), name).toBe('passed');
      expect(statusOf(run, 'client-no-expired-token'), name).toBe('passed');
      expect(statusOf(run, 'client-revocation-recovery'), name).toBe('passed');
      expect(statusOf(run, 'client-retry-after'), name).toBe('passed');
      // Each library renewed its short-phase tokens at least once (the phase was exercised).
      expect(run.session.tokens.filter((token) => token.phase === 'short').length, name).toBeGreaterThan(1);
      expect(run.session.tokens.filter((token) => token.phase === 'long').length, name).toBeGreaterThan(0);
    }
    // Go's 10-s and Authlib's 60-s windows outlast the 3-s tokens: the report says why that is allowed.
    for (const run of [go, authlib60])
      expect(run.report.checks.find((check) => check.id === 'client-token-reuse')!.details).toContain(
        'renews ahead by a window longer than those tokens',
      );
    // Go and Java call concurrently: their serialised renewals pass single flight.
    expect(statusOf(go, 'client-single-flight')).toBe('passed');
    expect(statusOf(java, 'client-single-flight')).toBe('passed');
    // How each authenticated: HTTP Basic, as the libraries do by default.
    for (const run of [go, authlib60, ruby])
      expect(new Set(run.session.exchanges.flatMap((e) => (e.form ? [e.form.clientAuth] : [])))).toEqual(
        new Set(['basic']),
      );
    for (const [name, run] of Object.entries({ goPerCall, authlibPerCall })) {
      expect(statusOf(run, 'client-token-reuse'), name).toBe('failed');
      expect(run.report.checks.find((check) => check.id === 'client-token-reuse')!.details, name).toContain(
        'no renewal window',
      );
    }
  }, 180_000);

  it('at the default settings (5-s tokens for 15 s, then 3600 s): Authlib 300 s ahead and Go 10 s ahead pass', async () => {
    const atDefaults = (command: string[], env: Record<string, string>) =>
      runClientConformance({
        command,
        env: { ...process.env, JOURNEY_SECONDS: '25', ...env },
        certify: true,
        stdio: 'pipe',
        timeoutSeconds: 90,
      });
    const [authlib300, go] = await Promise.all([
      atDefaults([python, `${clients}authlib-journey.py`], { LEEWAY: '300' }),
      atDefaults([goBinary], {}),
    ]);
    for (const [name, run] of Object.entries({ authlib300, go })) {
      expect(run.report.stage.ttlSeconds, name).toBe(5);
      expect(run.report.journey.exitCode, name).toBe(0);
      expect(byStatus(run, 'failed'), name).toEqual([]);
      expect(run.report.notVerified, name).toEqual([]);
      expect(statusOf(run, 'client-token-reuse'), name).toBe('passed');
    }
  }, 120_000);
});
