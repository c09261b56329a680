import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ServeProcess,
  startServe,
} from '../../../packages/certification-service/test/support/service.js';
import { bins, guideBlocks, repoRoot, type ShellRunner, shellRunner } from './helpers/guide-shell.js';

// "Certify from any CI", run as written. Every ```sh block of the guide runs, in the guide's order, as
// lines of one shell (the guide says so: later blocks read what earlier ones set), against a real
// certification service on 127.0.0.1 on the vendor's default plan (embedded store): `curl`, `jq` and the
// built `partner-conformance`. The blocks get only what the guide names: `$SERVICE`, `$API_KEY` (from the
// operator's `admin add-partner`), `$GIT_COMMIT` (what a CI sets) and the partner's `./journey.sh` — here
// the service's shipped `examples/curl-journey.sh`, which must certify under that plan. A block that
// fails stops the test with the guide's file and line.

const { shellBlocks } = await guideBlocks('certify-from-any-ci');
const curlJourney = join(repoRoot, 'packages/certification-service/examples/curl-journey.sh');
const serviceBin = join(bins, 'partner-certification-service');

let dir = '';
let work = '';
let service: ServeProcess | undefined;
let apiKey = '';
const vars: Record<string, string> = {};
let shell: ShellRunner | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'certify-guide-'));
  work = join(dir, 'work');
  await mkdir(work);
  const added = await promisify(execFile)(
    serviceBin,
    ['admin', 'add-partner', '--name', 'Acme Lending', '--json', '--data-dir', join(dir, 'data')],
    { cwd: dir, env: { PATH: process.env.PATH ?? '', DATABASE_URL: '' } },
  );
  apiKey = (JSON.parse(added.stdout) as { apiKey: string }).apiKey;
  // The vendor's default plan: no --plan.
  service = await startServe({ cwd: dir, args: ['--data-dir', join(dir, 'data'), '--log-format', 'text'] });
  vars.SERVICE = service.url;
  vars.API_KEY = apiKey;
  vars.GIT_COMMIT = '3f9c2e1d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e';
  // The partner's program: the shipped curl journey, run past the short-lived phase as the guide says.
  await writeFile(join(work, 'journey.sh'), `#!/bin/sh\nJOURNEY_SECONDS=21 exec sh "${curlJourney}"\n`);
  await chmod(join(work, 'journey.sh'), 0o755);
  shell = shellRunner({
    cwd: work,
    env: () => ({ PATH: `${bins}:${process.env.PATH ?? ''}`, HOME: dir, ...vars }),
    oneShell: { stateFile: join(dir, 'shell-state.sh') },
  });
}, 120_000);

afterAll(async () => {
  shell?.stop();
  await service?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const json = async (file: string) => JSON.parse(await readFile(join(work, file), 'utf8'));

describe('the certify-from-any-CI guide, every command as written', () => {
  it('runs every shell block in order: the shipped curl journey certifies under the default plan', async () => {
    const ran: string[] = [];
    for (const block of shellBlocks) {
      const code = block.code;
      const where = `guides/${block.file}:${block.line}`;
      const out = await shell!.run(block);
      if (code.includes('"$SERVICE/api/runs" ')) {
        const run = await json('run.json');
        expect(run.id, where).toMatch(/^run_/);
        expect(run.kind, where).toBe('certification');
        expect(run.certificationPlan.id, where).toMatch(/^partner-lending-default-v\d+$/);
        ran.push('created');
      } else if (code.includes('./journey.sh') && !code.includes('partner-conformance')) {
        ran.push('journey');
      } else if (code.includes('/finish"')) {
        const judged = await json('judged.json');
        expect(judged.verdict, `${where}: ${JSON.stringify(judged.notApprovable)}`).toBe('PASS');
        expect(judged.approvable, where).toBe(true);
        expect(judged.notApprovable, where).toEqual([]);
        expect(judged.report.integration, where).toEqual({ name: 'acme-loans', version: vars.GIT_COMMIT });
        for (const item of judged.coverage.operations as Array<{ operationId: string; succeeded: number }>)
          expect(item.succeeded, `${where}: ${item.operationId}`).toBeGreaterThan(0);
        expect(judged.coverage.operations).toHaveLength(4);
        ran.push('finished');
      } else if (code.includes('/attestation"')) {
        expect((await json('run.attestation.json')).payloadType, where).toBe('application/vnd.in-toto+json');
        expect((await json('run.session.json')).stage, where).toBeDefined();
        expect(await readFile(join(work, 'report.html'), 'utf8'), where).toContain('<html');
        ran.push('evidence');
      } else if (code.includes('partner-conformance client')) {
        expect(out.stdout, where).toMatch(/hosted run run_/);
        expect(out.stdout).not.toContain(apiKey);
        expect((await json('run.attestation.json')).payloadType, where).toBe('application/vnd.in-toto+json');
        ran.push('one command');
      } else {
        throw new Error(`${where}: a shell block this test does not know; say here what it must have done`);
      }
    }
    expect(ran).toEqual(['created', 'journey', 'finished', 'evidence', 'one command']);
  }, 180_000);

  it('a block stops loudly, naming the guide’s line: no GIT_COMMIT, a wrong key, a FAIL verdict (the negative controls)', async () => {
    const runId = (await json('run.json')).id as string;
    const create = shellBlocks.find((s) => s.code.includes('"$SERVICE/api/runs" '))!;
    const evidence = shellBlocks.find((s) => s.code.includes('/attestation"'))!;
    const where = `guides/${create.file}:${create.line}: the guide's block exited with`;
    const noCommit = shellRunner({
      cwd: work,
      env: () => ({ PATH: process.env.PATH ?? '', SERVICE: vars.SERVICE!, API_KEY: apiKey }),
    });
    await expect(noCommit.run(create)).rejects.toThrow(where);
    await expect(noCommit.run(create)).rejects.toThrow(/set GIT_COMMIT to the version you certify/);
    const wrongKey = shellRunner({
      cwd: work,
      env: () => ({ PATH: process.env.PATH ?? '', ...vars, API_KEY: 'pcs_key_not-a-key' }),
    });
    await expect(wrongKey.run(create)).rejects.toThrow(where);
    // A judged FAIL fails the evidence block (the CI step), saying why.
    await writeFile(join(work, 'judged.json'), JSON.stringify({ verdict: 'FAIL', notApprovable: ['x'] }));
    const failed = shellRunner({ cwd: work, env: () => ({ PATH: process.env.PATH ?? '', ...vars }) });
    await expect(failed.run(evidence, evidence.code.replaceAll('$RUN_ID', runId))).rejects.toThrow(
      `guides/${evidence.file}:${evidence.line}: the guide's block exited with 1`,
    );
  }, 60_000);
});
