import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

const journey = fileURLToPath(new URL('../../examples/journey.mjs', import.meta.url));

function io(env: Record<string, string | undefined> = process.env, signal?: AbortSignal) {
  let out = '';
  let err = '';
  let journeyOutput = '';
  return {
    io: {
      stdout: { write: (text: string) => (out += text) },
      stderr: { write: (text: string) => (err += text) },
      env,
      ...(signal && { signal }),
      clientOverrides: { stdio: 'pipe' as const, onOutput: (chunk: Buffer) => (journeyOutput += chunk) },
    },
    out: () => out,
    err: () => err,
    journeyOutput: () => journeyOutput,
  };
}

const tempDir = () => mkdtemp(join(tmpdir(), 'client-cli-'));

describe('partner-conformance client', () => {
  it('a practice run of the SDK journey passes every check, and --judge re-derives the same verdicts offline', async () => {
    const dir = await tempDir();
    const paths = {
      json: join(dir, 'reports', 'r.json'),
      html: join(dir, 'reports', 'r.html'),
      junit: join(dir, 'reports', 'r.xml'),
      session: join(dir, 'session.json'),
    };
    const run = io({ ...process.env, JOURNEY_SECONDS: '9' });
    const code = await main(
      [
        'client',
        '--ttl',
        '2',
        '--report-json',
        paths.json,
        '--report-html',
        paths.html,
        '--report-junit',
        paths.junit,
        '--save-session',
        paths.session,
        '--',
        process.execPath,
        journey,
      ],
      run.io,
    );
    expect(code, run.out() + run.err()).toBe(0);
    const report = JSON.parse(await readFile(paths.json, 'utf8'));
    expect(report.schemaVersion).toBe(3);
    expect(report.mode).toBe('client');
    expect(report.certify).toBe(false);
    expect(report.plan).toBeUndefined();
    expect(run.out()).toContain('plan      none — a practice run');
    for (const check of report.checks) expect(check.status, `${check.id}: ${check.details}`).toBe('passed');
    expect(report.journey).toMatchObject({ exitCode: 0, ending: 'exited' });
    expect(report.journey.command.at(-1)).toBe(journey);
    expect(run.journeyOutput()).toContain('listed 10 loans');
    const html = await readFile(paths.html, 'utf8');
    expect(html).toContain('<svg class="timeline"');
    // The HTML names the digest of its JSON twin, byte for byte the file written beside it.
    const digest = createHash('sha256')
      .update(await readFile(paths.json))
      .digest('hex');
    expect(html).toContain(`<code>${digest}</code>`);
    expect(html).toContain('Scenario plan');
    expect(await readFile(paths.junit, 'utf8')).toContain('<testsuite name="client-credentials"');

    const again = io();
    const rejudged = join(dir, 'rejudged.json');
    expect(await main(['client', '--judge', paths.session, '--report-json', rejudged], again.io)).toBe(0);
    const second = JSON.parse(await readFile(rejudged, 'utf8'));
    const verdicts = (r: { checks: Array<{ id: string; status: string; details: string }> }) =>
      r.checks.map(({ id, status, details }) => ({ id, status, details }));
    expect(verdicts(second)).toEqual(verdicts(report));
    const sessionText = await readFile(paths.session, 'utf8');
    expect(sessionText).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./);
  }, 90_000);

  it('--certify follows the certification plan: the reference client certifies, with the coverage at the top of the console, JSON, JUnit and HTML reports; practice flags are refused', async () => {
    const dir = await tempDir();
    const paths = { json: join(dir, 'r.json'), junit: join(dir, 'r.xml'), html: join(dir, 'r.html') };
    const referenceClient = fileURLToPath(new URL('../clients/reference-client.mjs', import.meta.url));
    const run = io({ ...process.env, BUG: '', JOURNEY_SECONDS: '18' });
    const code = await main(
      [
        'client',
        '--certify',
        '--report-json',
        paths.json,
        '--report-junit',
        paths.junit,
        '--report-html',
        paths.html,
        '--',
        process.execPath,
        referenceClient,
      ],
      run.io,
    );
    expect(code, run.out()).toBe(0);
    const out = run.out();
    const top = out.indexOf('plan      partner-lending-default-v2');
    expect(top).toBeGreaterThan(0);
    expect(top).toBeLessThan(out.indexOf('client-bearer-header'));
    for (const line of [
      'operation ✓ listLoans',
      'operation ✓ createLoanDraft',
      'operation ✓ createJournalUpdate',
      'operation ✓ createRepayment',
      'scenario  ✓ narrowed-grant: played yes, handled by client-granted-scope-respected (passed)',
      'scenario  ✓ revocation: played yes, handled by client-revocation-recovery (passed)',
      'scenario  ✓ renewal: played yes, handled by client-no-expired-token (passed)',
      'must not verified: none',
      'certification: every operation succeeded',
    ])
      expect(out).toContain(line);
    const report = JSON.parse(await readFile(paths.json, 'utf8'));
    expect(Object.keys(report).indexOf('coverage')).toBeLessThan(Object.keys(report).indexOf('checks'));
    expect(report.certification).toEqual({ passed: true, reasons: [] });
    expect(report.plan.id).toBe('partner-lending-default-v2');
    expect(await readFile(paths.junit, 'utf8')).toContain(
      'name="scenario:narrowed-grant" value="met: played, handled (client-granted-scope-respected passed)"',
    );
    const html = await readFile(paths.html, 'utf8');
    expect(html.indexOf('<h2>Coverage</h2>')).toBeLessThan(html.indexOf('<h2>Decision</h2>'));
    expect(html).toContain('operation ✓ createRepayment');
    expect(html).toContain('<th>scenario</th><th>played</th><th>judged by</th><th>handled</th><th>why</th>');

    const refused = io();
    expect(
      await main(['client', '--certify', '--ttl', '2', '--', process.execPath, referenceClient], refused.io),
    ).toBe(2);
    expect(refused.err()).toContain(
      '--ttl changes the certification plan, which --certify follows as it is (plan partner-lending-default-v2); drop --ttl, or drop --certify for a practice run',
    );
  }, 120_000);

  it('a judged session that was tampered into a failure fails (the verdict comes from the session)', async () => {
    const dir = await tempDir();
    const session = join(dir, 's.json');
    const run = io({ ...process.env, BUG: '', JOURNEY_SECONDS: '1' });
    const referenceClient = fileURLToPath(new URL('../clients/reference-client.mjs', import.meta.url));
    await main(
      ['client', '--ttl', '2', '--save-session', session, '--', process.execPath, referenceClient],
      run.io,
    );
    const parsed = JSON.parse(await readFile(session, 'utf8'));
    const call = parsed.exchanges.find((e: { server: string }) => e.server === 'api');
    call.target = call.target.replace(/partner\/[^/]+\//, 'partner/someone-else/');
    await writeFile(session, JSON.stringify(parsed));
    const judged = io();
    expect(await main(['client', '--judge', session], judged.io)).toBe(1);
    expect(judged.out()).toContain('✗ client-own-partner');
  }, 60_000);

  it('refuses a missing or non-executable command before starting anything (exit 2)', async () => {
    const missing = io();
    expect(await main(['client', '--', 'no-such-journey-command'], missing.io)).toBe(2);
    expect(missing.err()).toBe(
      'partner-conformance client: the journey command "no-such-journey-command" was not found on PATH; install it, or give its path (-- ./journey.sh)\n',
    );
    const dir = await tempDir();
    const script = join(dir, 'journey.sh');
    await writeFile(script, '#!/bin/sh\nexit 0\n');
    const notExecutable = io();
    expect(await main(['client', '--', script], notExecutable.io)).toBe(2);
    expect(notExecutable.err()).toContain(
      'is not an executable file; check the path and its execute permission (chmod +x)',
    );
    const empty = io();
    expect(await main(['client', '--'], empty.io)).toBe(2);
    expect(empty.err()).toContain('nothing follows --');
  });

  it('writes the report when the journey fails, says so, and fails certification', async () => {
    const dir = await tempDir();
    const script = join(dir, 'fail.sh');
    await writeFile(script, '#!/bin/sh\necho "journey: giving up" >&2\nexit 3\n');
    await chmod(script, 0o755);
    const json = join(dir, 'r.json');
    const run = io();
    expect(await main(['client', '--certify', '--report-json', json, '--', script], run.io)).toBe(1);
    const report = JSON.parse(await readFile(json, 'utf8'));
    expect(report.journey).toMatchObject({ exitCode: 3, ending: 'exited' });
    expect(run.out()).toContain(
      'FAIL — certification needs a journey that completes: the journey exited with 3',
    );
    expect(run.journeyOutput()).toContain('journey: giving up');
  }, 30_000);

  it('stops the whole process group of a journey past --timeout, and reports it', async () => {
    const dir = await tempDir();
    const pidFile = join(dir, 'child.pid');
    const script = join(dir, 'hang.sh');
    await writeFile(script, `#!/bin/sh\nsleep 60 &\necho $! > ${pidFile}\nwait\n`);
    await chmod(script, 0o755);
    const json = join(dir, 'r.json');
    const run = io();
    const started = Date.now();
    await main(['client', '--timeout', '1', '--report-json', json, '--', script], run.io);
    expect(Date.now() - started).toBeLessThan(15_000);
    const report = JSON.parse(await readFile(json, 'utf8'));
    expect(report.journey.ending).toBe('timeout');
    expect(report.journey.note).toContain('past --timeout (1 s)');
    const child = Number(await readFile(pidFile, 'utf8'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Gone, or a zombie waiting for a reaper (a container's init may not reap): not running either way.
    const state = await readFile(`/proc/${child}/stat`, 'utf8').then(
      (text) => text.slice(text.lastIndexOf(')') + 2).split(' ')[0],
      () => 'gone',
    );
    expect(['gone', 'Z', 'X'], `the journey's background child is ${state}`).toContain(state);
  }, 30_000);

  it('Ctrl-C stops the journey and still writes the report of what was seen', async () => {
    const dir = await tempDir();
    const script = join(dir, 'slow.sh');
    await writeFile(script, '#!/bin/sh\nsleep 30\n');
    await chmod(script, 0o755);
    const json = join(dir, 'r.json');
    const controller = new AbortController();
    const run = io(process.env, controller.signal);
    setTimeout(() => controller.abort(), 500);
    await main(['client', '--report-json', json, '--', script], run.io);
    const report = JSON.parse(await readFile(json, 'utf8'));
    expect(report.journey.ending).toBe('interrupted');
    expect(report.summary.passed).toBe(0);
  }, 30_000);

  it('says which port is in use (exit 2)', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = io();
      expect(await main(['client', '--port', String(port), '--', 'true'], run.io)).toBe(2);
      expect(run.err()).toBe(
        `partner-conformance client: the partner API port ${port} is already in use on 127.0.0.1; choose another (--port) or 0 for a random one\n`,
      );
    } finally {
      blocker.close();
    }
  });

  it('records without a command: --json prints the addresses and credentials once, plain output no secret', async () => {
    const json = io();
    expect(await main(['client', '--duration', '1', '--json'], json.io)).toBe(0);
    const first = JSON.parse(json.out().split('\n')[0]!);
    expect(first).toMatchObject({ partnerId: expect.any(String), clientId: expect.any(String) });
    expect(first.clientSecret.length).toBeGreaterThan(20);
    const plain = io();
    let secret = '';
    const plainIo = {
      ...plain.io,
      clientOverrides: {
        ...plain.io.clientOverrides,
        onStage: (stage: { client: { clientSecret: string } }) => {
          secret = stage.client.clientSecret;
        },
      },
    };
    expect(await main(['client', '--duration', '1'], plainIo)).toBe(0);
    expect(plain.out()).toContain('the secret is printed only with --json');
    expect(secret.length).toBeGreaterThan(20);
    expect(plain.out()).not.toContain(secret);
    // Nothing secret-shaped either, but the session's SHA-256 (a digest, printed on purpose).
    expect(plain.out().replace(/SHA-256 [0-9a-f]{64}/g, '')).not.toMatch(/clientSecret|[A-Za-z0-9_-]{32}/);
  }, 30_000);

  it('refuses damaged session files and contradictory flags with one line (exit 2)', async () => {
    const dir = await tempDir();
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{"kind":"something else"}');
    const run = io();
    expect(await main(['client', '--judge', bad], run.io)).toBe(2);
    expect(run.err()).toContain('is not a client session');
    const both = io();
    expect(await main(['client', '--judge', bad, '--ttl', '3'], both.io)).toBe(2);
    expect(both.err()).toContain('--ttl has no effect with --judge');
    const scenario = io();
    expect(await main(['client', '--scenario', 'flood', '--', 'true'], scenario.io)).toBe(2);
    expect(scenario.err()).toContain(
      'unknown scenario flood; the scenarios are revocation, throttle, unavailable, narrowed-grant',
    );
  });
});
