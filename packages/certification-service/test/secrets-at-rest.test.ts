import { createHash, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/index.js';
import { addWebhook } from '../src/production/webhooks/admin.js';
import { openSecret } from '../src/production/webhooks/seal.js';
import { openRunSecrets } from '../src/runs/run-secrets.js';
import { secretsKeyFrom } from '../src/secrets.js';
import { ed25519Pem, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun, runToken } from './support/service.js';

// After a run (and while it is open, when its secrets are in use), every row of every table is read:
// no client secret, stage private key, API key, reviewer credential, session token, CSRF token or
// webhook signing secret is there in the clear.

let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
});

/** Every row of every table of the database, as text. */
async function wholeDatabase(svc: InProcessService): Promise<string> {
  const tables = await svc.db.query<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
  );
  expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(['runs', 'reviewer_sessions']));
  const parts: string[] = [];
  for (const { name } of tables)
    for (const row of await svc.db.query<{ j: string }>(`SELECT row_to_json(t)::text AS j FROM "${name}" t`))
      parts.push(row.j);
  return parts.join('\n');
}

/** The bytes of every file under `dir` (the embedded store's files, as a copy of its disk would hold). */
function filesUnder(dir: string): Buffer {
  const chunks: Buffer[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path)) {
      const full = join(path, entry);
      if (statSync(full).isDirectory()) walk(full);
      else chunks.push(readFileSync(full));
    }
  };
  walk(dir);
  return Buffer.concat(chunks);
}

const pemBody = (pem: string) =>
  pem
    .split('\n')
    .filter((line) => line && !line.startsWith('-----'))
    .join('')
    .slice(0, 64);

describe.each(['embedded', 'postgres', 'postgres-journal'] as const)(
  'nothing secret at rest (%s)',
  (store) => {
    let svc: InProcessService;
    const attestationPem = ed25519Pem();
    const keyDir = mkdtempSync(join(tmpdir(), 'pcs-key-'));
    /** Where answered calls are written before the database has them (none when instances share PostgreSQL). */
    const journalDir = () =>
      store === 'embedded'
        ? join(svc.dir, 'data', 'journal')
        : store === 'postgres-journal'
          ? join(keyDir, 'journal')
          : undefined;
    beforeAll(async () => {
      const keyFile = join(keyDir, 'attestation.pem');
      writeFileSync(keyFile, attestationPem, { mode: 0o600 });
      const databaseUrl =
        store === 'embedded' ? undefined : await postgres.database(`secrets_${Date.now() % 1e6}`);
      svc = await inProcessService({
        keyFile,
        tokenDelayMs: 0,
        apiDelayMs: 0,
        ...(store === 'postgres' && { databaseUrl: databaseUrl! }),
        ...(store === 'postgres-journal' && {
          db: await openPostgres(databaseUrl!, { journalDir: join(keyDir, 'journal') }),
        }),
      });
    });
    afterAll(async () => {
      await svc?.close();
      if (store === 'postgres-journal') await svc?.db.close();
    });

    it('keeps verifiers and sealed values only, while the run is open and after it', async () => {
      const { url } = svc.service;
      const { apiKey } = await svc.partner('Secretive Co');
      const { credential } = await svc.reviewer('Rita Reviewer');
      const run = (await api(url, apiKey, 'POST', '/api/runs', { scenarios: [] })).json() as CreatedRun;
      const issued = await runToken(run);
      expect(issued.status).toBe(200);
      // The journal as the answer left it, before the database is filled from it (200 ms later).
      const journal = journalDir() && filesUnder(journalDir()!).toString('latin1');
      const signin = await fetch(`${url}/signin`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ credential }),
      });
      expect(signin.status).toBe(303);
      const sessionToken = /pcs_session=([^;]+)/.exec(signin.headers.get('set-cookie') ?? '')![1]!;
      const home = await (
        await fetch(`${url}/`, { headers: { cookie: `pcs_session=${sessionToken}` } })
      ).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(home)![1]!;

      // The stage's private key, as the instance opens it from the row (a positive control of sealing).
      const [row] = await svc.db.query('SELECT * FROM runs WHERE id = $1', [run.id]);
      const key = secretsKeyFrom(createPrivateKey(attestationPem));
      const opened = openRunSecrets(key, row as never);
      expect(opened.clientSecret).toBe(run.clientSecret);
      expect(opened.signingKey.privateKeyPem).toContain('PRIVATE KEY');
      // A webhook's signing secret, sealed as admin add-webhook seals it, opened as the dispatcher opens it.
      const hook = await addWebhook(svc.db, key, { url: 'http://127.0.0.1:9/hooks', events: ['run.judged'] });
      const [hookRow] = await svc.db.query<{ secret_sealed: string }>(
        'SELECT secret_sealed FROM webhooks WHERE id = $1',
        [hook.webhookId],
      );
      expect(openSecret(key, hook.webhookId, hookRow!.secret_sealed)).toBe(hook.secret);

      const secrets = {
        'client secret': run.clientSecret,
        'stage private key': pemBody(opened.signingKey.privateKeyPem),
        'API key': apiKey,
        'reviewer credential': credential,
        'session token': sessionToken,
        'CSRF token': csrf,
        'webhook secret': hook.secret.slice('whsec_'.length),
      };
      const found = (text: string) =>
        Object.entries(secrets)
          .filter(([, value]) => text.includes(value))
          .map(([name]) => name)
          .concat(text.includes('PRIVATE KEY') ? ['a PEM private key'] : []);

      const open = await wholeDatabase(svc);
      // The dump reads the rows that matter: the run, its verifier, the session's row.
      expect(open).toContain(run.id);
      expect(open).toContain(createHash('sha256').update(run.clientSecret).digest('hex'));
      expect(open).toContain(createHash('sha256').update(sessionToken).digest('hex'));
      expect(open).toContain(hook.webhookId);
      expect(found(open)).toEqual([]);
      if (journal !== undefined) {
        // The token request's exchange (its form redacted) and its token (by hash) are in the file.
        expect(journal).toContain(run.id);
        expect(journal).toContain('client_secret=[redacted]');
        expect(found(journal)).toEqual([]);
      }
      // Negative control: the same search finds a secret that is there.
      expect(found(`${open}\n${run.clientSecret}\n${csrf}\n${hook.secret}`)).toEqual([
        'client secret',
        'CSRF token',
        'webhook secret',
      ]);

      expect((await api(url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {})).status).toBe(200);
      const after = await wholeDatabase(svc);
      expect(after).toContain(run.id);
      expect(found(after)).toEqual([]);
      if (store === 'embedded') {
        const disk = filesUnder(join(svc.dir, 'data')).toString('latin1');
        expect(disk).toContain(run.id);
        expect(found(disk)).toEqual([]);
      }
    });
  },
);
