import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keysOf, parseEnvelope, verifyAttestation } from '@partner-lending/conformance';
import { describe, expect, it } from 'vitest';
import { loadSigningKey, type SigningKey } from '../src/index.js';
import { JudgingUnavailableError, judgingPool } from '../src/judging/pool.js';
import { type JudgeInput, judgeWork } from '../src/judging/work.mjs';
import { inProcessService } from './support/in-process.js';
import { api, type CreatedRun, runToken } from './support/service.js';

const failingJudge = fileURLToPath(new URL('./support/failing-judge.mjs', import.meta.url));
const slowJudge = fileURLToPath(new URL('./support/slow-judge.mjs', import.meta.url));

async function signingKey(): Promise<{ key: SigningKey; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-judging-'));
  return { key: await loadSigningKey({ dataDir: dir, warn: () => {} }), dir };
}

/** A short journey on a run: a token, then `calls` API calls with it. */
async function journey(run: CreatedRun, calls: number): Promise<void> {
  const token = await (await runToken(run)).json();
  for (let i = 0; i < calls; i += 1)
    await (
      await fetch(`${run.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
        headers: { authorization: `Bearer ${token.access_token}` },
      })
    ).text();
}

/** What judging was given, read back from the session the service serves (its exact bytes). */
function inputOf(sessionText: string, runUrl: string, key: SigningKey): JudgeInput {
  const session = JSON.parse(sessionText);
  return {
    id: runUrl.split('/').pop()!,
    runUrl,
    stage: session.stage,
    startedAtEpoch: Date.parse(session.startedAt),
    durationMs: session.durationMs,
    journey: session.journey,
    contents: {
      exchanges: session.exchanges,
      tokens: session.tokens,
      scenarios: session.scenarios,
      dropped: session.dropped,
      ...(session.outsideDropped !== undefined && { outsideDropped: session.outsideDropped }),
    },
    maxExchanges: session.maxExchanges,
    integration: session.integration,
    names: {
      partner: session.partner,
      service: session.service,
      ...(session.plan && { plan: session.plan }),
    },
    certify: false,
    privateKey: key.privateKey,
    kid: key.kid,
  };
}

/** A report without what changes from one judging to the next: how long it took. */
const timeless = (json: string) =>
  JSON.parse(json, (key, value) => (key === 'durationMs' || key === 'generatedAt' ? undefined : value));
const timelessHtml = (html: string) =>
  html.replace(/[0-9a-f]{64}/g, '(digest)').replace(/(&quot;|\\?")durationMs\1: [0-9.]+/g, '(duration)');
/** An attestation's statement without the digest of the report (which holds the durations). */
const statementOf = (attestation: string) => {
  const statement = JSON.parse(Buffer.from(parseEnvelope(attestation).payload, 'base64').toString('utf8'));
  statement.predicate.configuration = statement.predicate.configuration.filter(
    (entry: { name: string }) => entry.name !== 'report.json',
  );
  return statement;
};

describe('judging on threads of its own', () => {
  it('a run judged on a judging thread stores exactly what judging on the service thread gives', async () => {
    const { key, dir } = await signingKey();
    const svc = await inProcessService({ signingKey: key, judging: { threads: 1 } });
    const pool = judgingPool({ threads: 1 });
    try {
      const { apiKey } = await svc.partner('Threaded');
      const run = (await api(svc.service.url, apiKey, 'POST', '/api/runs', {})).json() as CreatedRun;
      await journey(run, 12);
      const finished = await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
        journeyExitCode: 0,
      });
      expect(finished.status).toBe(200);
      const get = async (path: string) => (await api(svc.service.url, apiKey, 'GET', path)).text;
      const stored = {
        session: await get(`/api/runs/${run.id}/session`),
        report: JSON.parse(await get(`/api/runs/${run.id}`)).report,
        html: await get(`/api/runs/${run.id}/report.html`),
        attestation: await get(`/api/runs/${run.id}/attestation`),
      };
      const input = inputOf(stored.session, `${svc.service.publicUrl}/api/runs/${run.id}`, key);
      const inThread = judgeWork(input);
      const onThread = await pool.judge('partner', input);
      // The worker and the service thread agree on every byte of the session, and on the verdicts, the
      // reports and the attestation up to the time judging took (a report says how long its checks ran)…
      expect(onThread.sessionText).toBe(inThread.sessionText);
      expect(onThread.sessionSha256).toBe(inThread.sessionSha256);
      expect(onThread.verdict).toBe(inThread.verdict);
      expect(timeless(onThread.reportJson)).toEqual(timeless(inThread.reportJson));
      expect(timelessHtml(onThread.reportHtml)).toBe(timelessHtml(inThread.reportHtml));
      expect(statementOf(onThread.attestation)).toEqual(statementOf(inThread.attestation));
      // …and both are what the service stored and serves, its attestation verifying with the service's key.
      expect(inThread.sessionText).toBe(stored.session);
      expect(timeless(inThread.reportJson)).toEqual(timeless(JSON.stringify(stored.report)));
      expect(timelessHtml(inThread.reportHtml)).toBe(timelessHtml(stored.html));
      expect(statementOf(inThread.attestation)).toEqual(statementOf(stored.attestation));
      const jwks = (await api(svc.service.url, undefined, 'GET', '/.well-known/jwks.json')).json();
      for (const attestation of [onThread.attestation, stored.attestation])
        expect(
          verifyAttestation(parseEnvelope(attestation), keysOf(jwks), Buffer.from(stored.session)).ok,
        ).toBe(true);
      // The control: judged with another exit code, or signed with another key, the outputs differ,
      // so the equalities above compare what judging made, not constants.
      const failed = await pool.judge('partner', { ...input, journey: { ...input.journey, exitCode: 3 } });
      expect(failed.sessionText).not.toBe(inThread.sessionText);
      expect(timeless(failed.reportJson)).not.toEqual(timeless(inThread.reportJson));
      expect(statementOf(failed.attestation)).not.toEqual(statementOf(inThread.attestation));
      const other = await signingKey();
      const resigned = judgeWork({ ...input, privateKey: other.key.privateKey, kid: other.key.kid });
      expect(statementOf(resigned.attestation)).toEqual(statementOf(inThread.attestation));
      expect(verifyAttestation(parseEnvelope(resigned.attestation), keysOf(jwks)).ok).toBe(false);
      expect(resigned.sessionText).toBe(inThread.sessionText);
      rmSync(other.dir, { recursive: true, force: true });
    } finally {
      await pool.close();
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a judging thread that crashes or hangs is answered 503 with Retry-After, the run stays open, and finishing again judges it', async () => {
    const svc = await inProcessService({ judging: { threads: 1, timeoutMs: 3000, filename: failingJudge } });
    try {
      const { apiKey } = await svc.partner('Unlucky');
      for (const [code, what] of [
        [101, 'failed'],
        [102, 'took longer than 3000 ms'],
      ] as const) {
        const run = (await api(svc.service.url, apiKey, 'POST', '/api/runs', {})).json() as CreatedRun;
        await journey(run, 3);
        const started = Date.now();
        const refused = await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
          journeyExitCode: code,
        });
        // Answered, bounded: never a hang.
        expect(Date.now() - started).toBeLessThan(60_000);
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('5');
        expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(refused.json().detail).toMatch(/still open: finish it again/);
        expect(refused.text).not.toMatch(/worker|exit|70/i);
        // Not passed, not judged: open, with no report; the operator's log says why.
        const state = (await api(svc.service.url, apiKey, 'GET', `/api/runs/${run.id}`)).json();
        expect(state.status).toBe('open');
        expect(state.report).toBeNull();
        expect(
          svc.lines.some((line) => line.includes(`run ${run.id}: judging failed`) && line.includes(what)),
        ).toBe(true);
        // The run is still served, and finishing it again (the thread replaced) judges it.
        await journey(run, 1);
        const again = await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
          journeyExitCode: 0,
        });
        expect(again.status).toBe(200);
        expect(again.json().status).toBe('judged');
        expect(again.json().report.run.id).toBe(run.id);
      }
      // The control: the same worker judges at the first finish when nothing fails.
      const run = (await api(svc.service.url, apiKey, 'POST', '/api/runs', {})).json() as CreatedRun;
      const first = await api(svc.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
        journeyExitCode: 0,
      });
      expect(first.status).toBe(200);
    } finally {
      await svc.close();
    }
  });

  it("takes partners' runs in turn: one partner's many finishes do not starve another's", async () => {
    const order = async (partners: string[]) => {
      const pool = judgingPool({ threads: 1, filename: slowJudge });
      const done: string[] = [];
      try {
        await Promise.all(
          partners.map((partner, i) =>
            pool
              .judge(partner, { id: `${partner}${i}` } as JudgeInput)
              .then((output) => void done.push(output.verdict)),
          ),
        );
      } finally {
        await pool.close();
      }
      return done;
    };
    // A queues five runs, then B one: B's is judged second, right after the run A had in progress.
    expect(await order(['a', 'a', 'a', 'a', 'a', 'b'])).toEqual(['a0', 'b5', 'a1', 'a2', 'a3', 'a4']);
    // The control: the same six runs of one partner are taken in order, the last one last.
    expect(await order(['a', 'a', 'a', 'a', 'a', 'a'])).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('bounds the runs waiting and refuses new work once closed', async () => {
    const pool = judgingPool({ threads: 1, filename: slowJudge, maxQueued: 2 });
    const first = pool.judge('a', { id: 'a0' } as JudgeInput); // taken by the thread at once
    const queued = [pool.judge('a', { id: 'a1' } as JudgeInput), pool.judge('b', { id: 'b2' } as JudgeInput)];
    await expect(pool.judge('c', { id: 'c3' } as JudgeInput)).rejects.toThrow(/2 runs are waiting/);
    expect((await first).verdict).toBe('a0');
    expect((await Promise.all(queued)).map((output) => output.verdict)).toEqual(['a1', 'b2']);
    await pool.close();
    await expect(pool.judge('a', { id: 'a4' } as JudgeInput)).rejects.toBeInstanceOf(JudgingUnavailableError);
  });
});
