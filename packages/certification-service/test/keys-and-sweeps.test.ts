import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keysOf, parseEnvelope, verifyAttestation } from '@partner-lending/conformance';
import { describe, expect, it } from 'vitest';
import { addPartner, openDatabase } from '../src/index.js';
import { ed25519Pem, inProcessService } from './support/in-process.js';
import { api, type CreatedRun, runToken } from './support/service.js';

describe('attestation keys', () => {
  it('rotate by kid: after a restart with a new key, the JWKS has both and an attestation signed before still verifies', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-rotate-'));
    const db = await openDatabase({ dataDir: join(dir, 'data') });
    try {
      const { apiKey } = await addPartner(db, 'Rotating');
      const attestationOn = async (keyPem: string) => {
        writeFileSync(join(dir, 'key.pem'), keyPem);
        const svc = await inProcessService({ db, keyFile: join(dir, 'key.pem') });
        try {
          const run = (await api(svc.service.url, apiKey, 'POST', '/api/runs', {})).json() as CreatedRun;
          await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
          const attestation = (await api(svc.service.url, apiKey, 'GET', `/api/runs/${run.id}/attestation`))
            .text;
          const session = (await api(svc.service.url, apiKey, 'GET', `/api/runs/${run.id}/session`)).text;
          const jwks = (await api(svc.service.url, undefined, 'GET', '/.well-known/jwks.json')).json();
          return { attestation, session, jwks };
        } finally {
          await svc.close();
        }
      };
      const before = await attestationOn(ed25519Pem());
      const after = await attestationOn(ed25519Pem());
      const kidOf = (text: string) => parseEnvelope(text).signatures[0]!.keyid;
      expect(kidOf(before.attestation)).not.toBe(kidOf(after.attestation));
      expect(after.jwks.keys.map((key: { kid: string }) => key.kid).sort()).toEqual(
        [kidOf(before.attestation), kidOf(after.attestation)].sort(),
      );
      // The old attestation against the new JWKS: the signature and the session still hold.
      const old = verifyAttestation(
        parseEnvelope(before.attestation),
        keysOf(after.jwks),
        Buffer.from(before.session),
      );
      expect(old.problems).toEqual([]);
      expect(old.ok).toBe(true);
      // The control: against the JWKS of before the rotation, the new attestation's key is unknown.
      expect(verifyAttestation(parseEnvelope(after.attestation), keysOf(before.jwks)).ok).toBe(false);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('runs nobody finishes', () => {
  it('a run that idles is judged by the sweeper, and its addresses close', async () => {
    const svc = await inProcessService({ limits: { idleSeconds: 1 }, sweepIntervalMs: 200 });
    try {
      const { apiKey } = await svc.partner('Idler');
      const run = (await api(svc.service.url, apiKey, 'POST', '/api/runs', {})).json() as CreatedRun;
      const token = await runToken(run);
      expect(token.status).toBe(200);
      // Still open while it is being used: the control of the wait below.
      expect((await api(svc.service.url, apiKey, 'GET', `/api/runs/${run.id}`)).json().status).toBe('open');
      let state = (await api(svc.service.url, apiKey, 'GET', `/api/runs/${run.id}`)).json();
      for (let i = 0; i < 40 && state.status === 'open'; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        state = (await api(svc.service.url, apiKey, 'GET', `/api/runs/${run.id}`)).json();
      }
      expect(state.status).toBe('judged');
      expect(state.report.journey.note).toBe('the run received nothing for 1 s and was judged');
      expect(state.report.journey.calls.token).toBe(1);
      const late = await runToken(run);
      expect(late.status).toBe(404);
    } finally {
      await svc.close();
    }
  });
});
