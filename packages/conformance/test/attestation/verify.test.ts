import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import {
  certificationPlan,
  formatSession,
  judgeSession,
  keysOf,
  parseEnvelope,
  parseSession,
  publicJwk,
  signEnvelope,
  testResultStatement,
  verifyAttestation,
} from '../../src/index.js';
import { loans, sessionOf, tokenRequest } from '../client/support/session.js';
import { capturedIo } from '../helpers.js';

/** A judged session signed as the certification service signs it, with an Ed25519 or ES256 key. */
async function attested(
  algorithm: 'ed25519' | 'ec',
  session = sessionOf([tokenRequest(0, 'T1'), loans(10, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]),
  certify = false,
) {
  const { privateKey } =
    algorithm === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const jwk = await publicJwk(privateKey);
  const sessionBytes = Buffer.from(formatSession(session));
  const report = judgeSession(session, { certify });
  const statement = testResultStatement({ sessionBytes, report });
  const envelope = signEnvelope(Buffer.from(JSON.stringify(statement)), privateKey, jwk.kid);
  return { envelope, jwks: { keys: [jwk] }, sessionBytes, statement };
}

describe('attestations: DSSE envelopes of in-toto test results, verified offline', () => {
  for (const algorithm of ['ed25519', 'ec'] as const)
    it(`${algorithm === 'ec' ? 'ES256' : 'Ed25519'}: a signed attestation verifies, and its session is judged again to the same verdicts`, async () => {
      const { envelope, jwks, sessionBytes, statement } = await attested(algorithm);
      expect(statement.predicate.result).toBe('PASSED');
      const result = verifyAttestation(envelope, keysOf(jwks), sessionBytes);
      expect(result.problems).toEqual([]);
      expect(result.ok).toBe(true);
      expect(result.rederived?.passedTests).toEqual(statement.predicate.passedTests);
    });

  it('a one-byte change anywhere fails: the payload, the signature, the session', async () => {
    const { envelope, jwks, sessionBytes } = await attested('ed25519');
    const keys = keysOf(jwks);
    const payload = Buffer.from(envelope.payload, 'base64');
    payload[payload.length - 3]! ^= 1;
    expect(
      verifyAttestation({ ...envelope, payload: payload.toString('base64') }, keys).problems[0],
    ).toContain('the signature does not verify');
    const sig = Buffer.from(envelope.signatures[0]!.sig, 'base64');
    sig[0]! ^= 1;
    expect(
      verifyAttestation(
        { ...envelope, signatures: [{ ...envelope.signatures[0]!, sig: sig.toString('base64') }] },
        keys,
      ).ok,
    ).toBe(false);
    const session = Buffer.from(sessionBytes);
    session[session.indexOf('"status": 200')] = ' '.charCodeAt(0);
    const result = verifyAttestation(envelope, keys, session);
    expect(result.ok).toBe(false);
    expect(result.problems[0]).toContain('not the session attested');
  });

  it('a key it was not signed with, and a statement that lies about its session, do not verify', async () => {
    const { envelope, sessionBytes } = await attested('ed25519');
    const other = await attested('ed25519');
    expect(verifyAttestation(envelope, keysOf(other.jwks)).problems[0]).toContain(
      'no signature is by a key given',
    );
    // A signer that states PASSED for a session whose must check fails: judging again catches it.
    const failing = sessionOf(
      [tokenRequest(0, 'T1'), loans(10, 'T1', 200, { target: '/v3/partner/someone-else/loans' })],
      [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
    );
    const lie = await attested('ed25519', failing);
    const statement = {
      ...lie.statement,
      predicate: { ...lie.statement.predicate, result: 'PASSED' as const, failedTests: [] },
    };
    const { privateKey } = generateKeyPairSync('ed25519');
    const jwk = await publicJwk(privateKey);
    const signed = signEnvelope(Buffer.from(JSON.stringify(statement)), privateKey, jwk.kid);
    const result = verifyAttestation(signed, keysOf({ keys: [jwk] }), lie.sessionBytes);
    expect(result.ok).toBe(false);
    expect(result.problems.join('\n')).toContain('the session judges FAILED, the attestation says PASSED');
    expect(sessionBytes.length).toBeGreaterThan(0);
  });

  it('partner-conformance verify: exit 0 when it holds, 1 after a one-byte change, 2 without keys', async () => {
    const { envelope, jwks, sessionBytes } = await attested('ec');
    const dir = await mkdtemp(join(tmpdir(), 'verify-'));
    const files = {
      envelope: join(dir, 'attestation.json'),
      keys: join(dir, 'jwks.json'),
      session: join(dir, 'session.json'),
    };
    await writeFile(files.envelope, JSON.stringify(envelope));
    await writeFile(files.keys, JSON.stringify(jwks));
    await writeFile(files.session, sessionBytes);
    const ok = capturedIo();
    expect(
      await main(['verify', files.envelope, '--keys', files.keys, '--session', files.session], ok.io),
    ).toBe(0);
    expect(ok.out()).toContain('attestation holds: signed by');
    expect(ok.out()).toContain('judged again to the same verdicts');
    const text = JSON.stringify(envelope);
    const changed = text.replace(/"payload":"(.)/, (_, c: string) => `"payload":"${c === 'A' ? 'B' : 'A'}`);
    await writeFile(files.envelope, changed);
    expect(parseEnvelope(changed).payload).not.toBe(envelope.payload);
    const bad = capturedIo();
    expect(await main(['verify', files.envelope, '--keys', files.keys], bad.io)).toBe(1);
    expect(bad.out()).toContain('does NOT hold: its payload does not parse as JSON');
    const usage = capturedIo();
    expect(await main(['verify', files.envelope], usage.io)).toBe(2);
    expect(usage.err()).toContain('--keys is needed');
  });

  it('names whose run it is (partner, integration, plan, service), and --require-pass exits 1 on a failed run', async () => {
    const names = {
      partner: { id: 'partner_7f3', name: 'Acme Lending' },
      integration: { name: 'acme-loans', version: 'v1.4.2' },
      service: { url: 'https://certify.partner-lending.example', version: '1.2.0' },
    };
    const passing = {
      ...sessionOf([tokenRequest(0, 'T1'), loans(10, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]),
      ...names,
    };
    const failing = {
      ...sessionOf(
        [tokenRequest(0, 'T1'), loans(10, 'T1', 200, { target: '/v3/partner/someone-else/loans' })],
        [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
      ),
      ...names,
    };
    const dir = await mkdtemp(join(tmpdir(), 'verify-names-'));
    const results: Record<string, { gated: number; plain: number; out: string }> = {};
    for (const [label, session] of [
      ['passing', passing],
      ['failing', failing],
    ] as const) {
      const { envelope, jwks, statement } = await attested('ed25519', session);
      expect(statement.predicate.partner).toEqual(names.partner);
      expect(statement.predicate.service).toEqual(names.service);
      expect(statement.predicate.integration).toEqual(names.integration);
      const file = join(dir, `${label}.json`);
      const keys = join(dir, `${label}-jwks.json`);
      await writeFile(file, JSON.stringify(envelope));
      await writeFile(keys, JSON.stringify(jwks));
      const plain = capturedIo();
      const gated = capturedIo();
      results[label] = {
        plain: await main(['verify', file, '--keys', keys], plain.io),
        gated: await main(['verify', file, '--keys', keys, '--require-pass'], gated.io),
        out: plain.out() + gated.out(),
      };
    }
    expect(results.passing).toMatchObject({ plain: 0, gated: 0 });
    expect(results.passing!.out).toContain('partner partner_7f3 Acme Lending\n');
    expect(results.passing!.out).toContain('integration acme-loans v1.4.2\n');
    expect(results.passing!.out).toContain('service https://certify.partner-lending.example 1.2.0\n');
    // The signature holds on a failed run (exit 0), but the gate refuses it.
    expect(results.failing).toMatchObject({ plain: 0, gated: 1 });
    expect(results.failing!.out).toContain('--require-pass: the attested run did not pass (result FAILED)');
  });

  it('lists what the plan found missing when the session is judged again, as the service names it', async () => {
    const session = {
      ...sessionOf([tokenRequest(0, 'T1'), loans(10, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]),
      plan: certificationPlan,
    };
    const { envelope, jwks, sessionBytes } = await attested('ed25519', session, true);
    const dir = await mkdtemp(join(tmpdir(), 'verify-plan-'));
    const [file, keys, sessionFile] = ['attestation.json', 'jwks.json', 'session.json'].map((name) =>
      join(dir, name),
    ) as [string, string, string];
    await writeFile(file, JSON.stringify(envelope));
    await writeFile(keys, JSON.stringify(jwks));
    await writeFile(sessionFile, sessionBytes);
    const io = capturedIo();
    expect(await main(['verify', file, '--keys', keys, '--session', sessionFile], io.io)).toBe(0);
    const reasons = judgeSession(parseSession(sessionBytes.toString('utf8')), { certify: true })
      .certification!.reasons;
    expect(reasons.length).toBeGreaterThan(3);
    expect(io.out()).toContain(`not certified under the plan (${reasons.length} reasons):\n`);
    for (const reason of reasons) expect(io.out()).toContain(`  - ${reason}\n`);
    expect(io.out()).toContain('  - operation-not-succeeded: createLoanDraft');
    // Negative control: without the session nothing is judged again, and nothing is claimed.
    const bare = capturedIo();
    expect(await main(['verify', file, '--keys', keys], bare.io)).toBe(0);
    expect(bare.out()).not.toContain('certified under the plan');
  });

  it('marks the report judged again attested only when the signature verifies and the session is the subject', async () => {
    const { envelope, jwks, sessionBytes, statement } = await attested('ed25519');
    const subject = statement.subject[0]?.digest?.sha256 ?? '';
    expect(subject).toMatch(/^[0-9a-f]{64}$/);
    const held = verifyAttestation(envelope, keysOf(jwks), sessionBytes, { sessionFile: 'session.json' });
    expect(held.ok).toBe(true);
    expect(held.report?.provenance).toMatchObject({
      source: 'rejudged',
      attested: true,
      mark: 'attested: its signature was verified',
      sessionSha256: subject,
      sessionFile: 'session.json',
    });
    // The same bytes judged as `client --judge` judges them: self-recorded, not attested.
    const session = parseSession(sessionBytes.toString('utf8'), 'the session');
    const selfJudged = judgeSession(session, {
      provenance: { source: 'rejudged', sessionSha256: subject },
    });
    expect(selfJudged.provenance).toMatchObject({ attested: false, mark: 'self-recorded, not attested' });
    // Negative controls: no session, another session, a signature by another key: no attested report.
    expect(verifyAttestation(envelope, keysOf(jwks)).report).toBeUndefined();
    const other = await attested(
      'ed25519',
      sessionOf([tokenRequest(0, 'T1'), loans(20, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]),
    );
    const mismatched = verifyAttestation(envelope, keysOf(jwks), other.sessionBytes);
    expect(mismatched.ok).toBe(false);
    expect(mismatched.problems.join('\n')).toContain('not the session attested');
    expect(mismatched.report).toBeUndefined();
    const unsigned = verifyAttestation(envelope, keysOf(other.jwks), sessionBytes);
    expect(unsigned.ok).toBe(false);
    expect(unsigned.report).toBeUndefined();
  });

  it('partner-conformance verify --report-json writes the attested report; client --judge stays not attested; another session writes none', async () => {
    const { envelope, jwks, sessionBytes } = await attested('ec');
    const other = await attested(
      'ec',
      sessionOf([tokenRequest(0, 'T1'), loans(20, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]),
    );
    const dir = await mkdtemp(join(tmpdir(), 'verify-attested-'));
    const file = (name: string) => join(dir, name);
    await writeFile(file('attestation.json'), JSON.stringify(envelope));
    await writeFile(file('jwks.json'), JSON.stringify(jwks));
    await writeFile(file('session.json'), sessionBytes);
    await writeFile(file('other-session.json'), other.sessionBytes);
    const reportOf = async (name: string) =>
      JSON.parse(await readFile(file(name), 'utf8')) as {
        provenance: { attested: boolean; mark: string };
      };

    const verified = capturedIo();
    const verifyArgs = ['verify', file('attestation.json'), '--keys', file('jwks.json')];
    expect(
      await main(
        [
          ...verifyArgs,
          '--session',
          file('session.json'),
          '--report-json',
          file('verified.json'),
          '--report-junit',
          file('verified.xml'),
          '--report-html',
          file('verified.html'),
        ],
        verified.io,
      ),
      verified.err(),
    ).toBe(0);
    expect(verified.out()).toContain('provenance attested: its signature was verified\n');
    expect((await reportOf('verified.json')).provenance).toMatchObject({
      attested: true,
      mark: 'attested: its signature was verified',
    });
    expect(await readFile(file('verified.xml'), 'utf8')).toContain(
      '<property name="attested" value="true"/>',
    );
    expect(await readFile(file('verified.html'), 'utf8')).toContain('attested: its signature was verified');

    const judged = capturedIo();
    expect([0, 1]).toContain(
      await main(
        ['client', '--judge', file('session.json'), '--report-json', file('judged.json')],
        judged.io,
      ),
    );
    expect(judged.out()).toContain('self-recorded, not attested');
    expect((await reportOf('judged.json')).provenance).toMatchObject({
      attested: false,
      mark: 'self-recorded, not attested',
    });

    const mismatched = capturedIo();
    expect(
      await main(
        [...verifyArgs, '--session', file('other-session.json'), '--report-json', file('mismatched.json')],
        mismatched.io,
      ),
    ).toBe(1);
    expect(mismatched.out()).toContain('not the session attested');
    expect(mismatched.out()).toContain('no report written: the attestation does not hold for this session');
    expect(mismatched.out()).not.toContain('provenance attested');
    expect(existsSync(file('mismatched.json'))).toBe(false);

    const noSession = capturedIo();
    expect(await main([...verifyArgs, '--report-json', file('alone.json')], noSession.io)).toBe(2);
    expect(noSession.err()).toContain('give --session FILE');
  });
});
