import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import {
  type DecisionStatement,
  decisionPredicateType,
  keysOf,
  publicJwk,
  signEnvelope,
  verifyDecision,
} from '../../src/index.js';
import { capturedIo } from '../helpers.js';

/** A decision statement signed as the certification service signs one, resting on `attestation`'s bytes. */
async function decided(attestation: Buffer, decision: string = 'approved') {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = await publicJwk(privateKey);
  const statement: DecisionStatement = {
    _type: 'https://in-toto.io/Statement/v1',
    subject: [
      {
        name: 'run_abc.attestation.json',
        digest: { sha256: createHash('sha256').update(attestation).digest('hex') },
      },
    ],
    predicateType: decisionPredicateType,
    predicate: {
      partner: { id: 'partner_7f3', name: 'Acme Lending' },
      decision: decision as DecisionStatement['predicate']['decision'],
      scopes: ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'],
      reviewer: { name: 'Dana Reviewer' },
      at: '2026-11-25T10:00:00.000Z',
      validUntil: '2027-11-25T10:00:00.000Z',
      note: 'certified on all four operations',
      runId: 'run_abc',
    },
  };
  const envelope = signEnvelope(Buffer.from(JSON.stringify(statement)), privateKey, jwk.kid);
  return { envelope, jwks: { keys: [jwk] } };
}

describe('decision statements, verified offline', () => {
  it('a signed decision verifies and rests on its attestation; a one-byte change to either fails', async () => {
    const attestation = Buffer.from(
      '{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}',
    );
    const { envelope, jwks } = await decided(attestation);
    const keys = keysOf(jwks);
    const good = verifyDecision(envelope, keys, attestation);
    expect(good.problems).toEqual([]);
    expect(good.statement?.predicate.partner).toEqual({ id: 'partner_7f3', name: 'Acme Lending' });

    const payload = Buffer.from(envelope.payload, 'base64');
    payload[payload.indexOf('approved')]! ^= 1;
    const changed = verifyDecision({ ...envelope, payload: payload.toString('base64') }, keys, attestation);
    expect(changed.ok).toBe(false);
    expect(changed.problems[0]).toContain('the signature does not verify');

    const otherAttestation = Buffer.from(attestation);
    otherAttestation[otherAttestation.length - 2] = ' '.charCodeAt(0);
    const elsewhere = verifyDecision(envelope, keys, otherAttestation);
    expect(elsewhere.ok).toBe(false);
    expect(elsewhere.problems[0]).toContain('not the attestation this decision rests on');
  });

  it("the service's own suspension (on a regression) verifies; a decision word it never signs does not", async () => {
    const attestation = Buffer.from(
      '{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}',
    );
    const suspended = await decided(attestation, 'suspended');
    expect(verifyDecision(suspended.envelope, keysOf(suspended.jwks), attestation).problems).toEqual([]);
    const paused = await decided(attestation, 'paused');
    const refused = verifyDecision(paused.envelope, keysOf(paused.jwks), attestation);
    expect(refused.ok).toBe(false);
    expect(refused.problems.join(' ')).toMatch(/predicate/);
  });

  it('partner-conformance verify DECISION_FILE prints partner, decision, scopes and validUntil; exit 1 after a one-byte change', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'decision-'));
    const files = {
      attestation: join(dir, 'run_abc.attestation.json'),
      decision: join(dir, 'decision.json'),
      keys: join(dir, 'jwks.json'),
    };
    await writeFile(
      files.attestation,
      '{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}\n',
    );
    const { envelope, jwks } = await decided(await readFile(files.attestation));
    await writeFile(files.decision, JSON.stringify(envelope));
    await writeFile(files.keys, JSON.stringify(jwks));

    const ok = capturedIo();
    expect(
      await main(['verify', files.decision, '--keys', files.keys, '--attestation', files.attestation], ok.io),
    ).toBe(0);
    expect(ok.out()).toContain('decision holds: signed by');
    expect(ok.out()).toContain('partner partner_7f3 Acme Lending\n');
    expect(ok.out()).toContain(
      'decision approved on run run_abc at 2026-11-25T10:00:00.000Z by Dana Reviewer\n',
    );
    expect(ok.out()).toContain(
      'scopes read:loans create:loan_draft create:journal_update create:repayment\n',
    );
    expect(ok.out()).toContain('validUntil 2027-11-25T10:00:00.000Z\n');
    expect(ok.out()).toContain(': the attestation given');

    // One byte of the attestation beside it changed: the decision does not rest on it.
    const attestation = await readFile(files.attestation);
    attestation[attestation.length - 3] = 'X'.charCodeAt(0);
    await writeFile(files.attestation, attestation);
    const other = capturedIo();
    expect(
      await main(
        ['verify', files.decision, '--keys', files.keys, '--attestation', files.attestation],
        other.io,
      ),
    ).toBe(1);
    expect(other.out()).toContain('decision does NOT hold');

    // One byte of the decision changed: its signature fails.
    const text = JSON.stringify(envelope);
    const changed = text.replace(/"sig":"(.)/, (_, c: string) => `"sig":"${c === 'A' ? 'B' : 'A'}`);
    await writeFile(files.decision, changed);
    const bad = capturedIo();
    expect(await main(['verify', files.decision, '--keys', files.keys], bad.io)).toBe(1);
    expect(bad.out()).toContain('the signature does not verify');

    // --session and --require-pass belong to attestations.
    await writeFile(files.decision, text);
    const usage = capturedIo();
    expect(await main(['verify', files.decision, '--keys', files.keys, '--require-pass'], usage.io)).toBe(2);
    expect(usage.err()).toContain('--require-pass is for an attestation');
  });

  it('verify on a decision whose payload no longer parses as JSON says so (not "is an attestation"), exit 1', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'decision-'));
    const attestation = Buffer.from(
      '{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}',
    );
    const { envelope, jwks } = await decided(attestation);
    const files = {
      decision: join(dir, 'decision.json'),
      keys: join(dir, 'jwks.json'),
      attestation: join(dir, 'a.json'),
    };
    await writeFile(files.keys, JSON.stringify(jwks));
    await writeFile(files.attestation, attestation);
    // One byte of the payload changed so that it is no longer JSON (the opening brace).
    const payload = Buffer.from(envelope.payload, 'base64');
    payload[0] = 'X'.charCodeAt(0);
    await writeFile(files.decision, JSON.stringify({ ...envelope, payload: payload.toString('base64') }));
    for (const extra of [['--attestation', files.attestation], []]) {
      const run = capturedIo();
      expect(await main(['verify', files.decision, '--keys', files.keys, ...extra], run.io)).toBe(1);
      expect(run.out()).toContain(`${files.decision} does NOT hold: its payload does not parse as JSON (`);
      expect(run.out()).toContain('changed or damaged after it was signed');
      expect(run.out() + run.err()).not.toContain('is an attestation');
    }
    // JSON, but not an object: said too.
    await writeFile(
      files.decision,
      JSON.stringify({ ...envelope, payload: Buffer.from('[1, 2]').toString('base64') }),
    );
    const array = capturedIo();
    expect(await main(['verify', files.decision, '--keys', files.keys], array.io)).toBe(1);
    expect(array.out()).toContain('its payload is JSON but not an object');
  });
});
