import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePlan } from '../src/index.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { conformanceBin, referenceClient, runCommand } from './support/service.js';

let svc: InProcessService;
let keyFile: string;
let apiKey: string;

beforeAll(async () => {
  svc = await inProcessService({ plan: makePlan({ id: 'short', ttlSeconds: 2 }) });
  ({ apiKey } = await svc.partner('CLI Partner'));
  keyFile = join(svc.dir, 'service-key.txt');
  writeFileSync(keyFile, `${apiKey}\n`, { mode: 0o600 });
});
afterAll(() => svc.close());

describe('partner-conformance client --service', () => {
  it('runs the journey against a hosted run and writes the service’s report, session and attestation, which verify', async () => {
    const out = (name: string) => join(svc.dir, name);
    const result = await runCommand(
      process.execPath,
      [
        conformanceBin,
        'client',
        '--service',
        svc.service.url,
        '--service-key-file',
        keyFile,
        '--certify',
        '--partner',
        'CLI Partner',
        '--integration-version',
        'v9',
        '--attestation',
        out('run.attestation.json'),
        '--report-json',
        out('report.json'),
        '--report-html',
        out('report.html'),
        '--report-junit',
        out('report.xml'),
        '--save-session',
        out('run.session.json'),
        '--',
        process.execPath,
        referenceClient,
      ],
      { env: { JOURNEY_SECONDS: '9' }, timeoutMs: 90_000 },
    );
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('hosted run run_');
    expect(result.stdout).not.toContain(apiKey);
    expect(result.code).toBe(0);
    const report = JSON.parse(readFileSync(out('report.json'), 'utf8'));
    expect(report.provenance.source).toBe('service');
    expect(report.run.url).toBe(`${svc.service.url}/api/runs/${report.run.id}`);
    expect(report.integration).toEqual({ name: 'CLI Partner', version: 'v9' });
    expect(readFileSync(out('report.html'), 'utf8')).toContain('Content-Security-Policy');
    // The report written here is the report the attestation names, byte for byte.
    const envelope = JSON.parse(readFileSync(out('run.attestation.json'), 'utf8'));
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
    const named = statement.predicate.configuration.find(
      (item: { name: string }) => item.name === 'report.json',
    );
    expect(named.digest.sha256).toBe(
      createHash('sha256')
        .update(readFileSync(out('report.json')))
        .digest('hex'),
    );
    const verified = await runCommand(process.execPath, [
      conformanceBin,
      'verify',
      out('run.attestation.json'),
      '--keys',
      `${svc.service.url}/.well-known/jwks.json`,
      '--session',
      out('run.session.json'),
    ]);
    expect(verified.code).toBe(0);
  });

  it('a journey that fails its own run gets exit 1 (not vacuous), and a wrong key or a missing flag says what to do', async () => {
    const failing = await runCommand(
      process.execPath,
      [
        conformanceBin,
        'client',
        '--service',
        svc.service.url,
        '--service-key-file',
        keyFile,
        '--certify',
        '--',
        process.execPath,
        referenceClient,
      ],
      { env: { JOURNEY_SECONDS: '2', BUG: 'secret-to-api' }, timeoutMs: 90_000 },
    );
    expect(failing.code).toBe(1);
    expect(failing.stdout).toMatch(/FAIL/);

    writeFileSync(join(svc.dir, 'wrong-key.txt'), 'pcs_key_this-is-not-a-key-at-all');
    const wrong = await runCommand(process.execPath, [
      conformanceBin,
      'client',
      '--service',
      svc.service.url,
      '--service-key-file',
      join(svc.dir, 'wrong-key.txt'),
      '--',
      'true',
    ]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(
      /refused POST \/api\/runs \(HTTP 401\).*check the key in --service-key-file/,
    );
    expect(wrong.stderr).not.toContain('this-is-not-a-key');

    const usage = await runCommand(process.execPath, [
      conformanceBin,
      'client',
      '--service',
      svc.service.url,
      '--',
      'true',
    ]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--service needs --service-key-file FILE');
    const local = await runCommand(process.execPath, [
      conformanceBin,
      'client',
      '--service',
      svc.service.url,
      '--service-key-file',
      keyFile,
      '--port',
      '9',
      '--',
      'true',
    ]);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain('--port is for a run on this machine');
    const unreachable = await runCommand(process.execPath, [
      conformanceBin,
      'client',
      '--service',
      'http://127.0.0.1:9',
      '--service-key-file',
      keyFile,
      '--',
      'true',
    ]);
    expect(unreachable.code).toBe(3);
  });
});
