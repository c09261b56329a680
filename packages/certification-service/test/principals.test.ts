import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPartner, addReviewer } from '../src/admin.js';
import { openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrations.js';
import type { Database } from '../src/db/types.js';
import { addEvidenceReporter } from '../src/evidence/reporters.js';
import { type PrincipalKindName, principalKinds } from '../src/principals.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { addWebhook } from '../src/production/webhooks/admin.js';
import { openSecret } from '../src/production/webhooks/seal.js';
import { hashSecret, newId, newSecret, secretsKeyFrom } from '../src/secrets.js';

// Every principal an operator adds gets its id from newId (prefix, `_`, 16 base64url characters: 96
// bits) and its secret from newSecret (prefix, `_`, 32 random bytes: 43 base64url characters, or 44
// base64 for a webhook's Standard Webhooks secret), the formats they had before they were made in one place.

/** What each kind's id and secret look like. */
const formats: Record<PrincipalKindName, { id: RegExp; secret: RegExp }> = {
  partner: { id: /^ptn_[A-Za-z0-9_-]{16}$/, secret: /^pcs_key_[A-Za-z0-9_-]{43}$/ },
  reviewer: { id: /^rev_[A-Za-z0-9_-]{16}$/, secret: /^pcs_reviewer_[A-Za-z0-9_-]{43}$/ },
  'register-reader': { id: /^rdr_[A-Za-z0-9_-]{16}$/, secret: /^pcs_register_[A-Za-z0-9_-]{43}$/ },
  'evidence-reporter': { id: /^evr_[A-Za-z0-9_-]{16}$/, secret: /^pcs_evidence_[A-Za-z0-9_-]{43}$/ },
  webhook: { id: /^whk_[A-Za-z0-9_-]{16}$/, secret: /^whsec_[A-Za-z0-9+/]{43}=$/ },
};

describe('principals', () => {
  let dir: string;
  let db: Database;
  const secretsKey = secretsKeyFrom('principals test');
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-principals-'));
    db = await openDatabase({ dataDir: join(dir, 'data') });
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Adds one principal of each kind, many times, through the functions the commands call. */
  const addEach = async () => {
    const made: Record<PrincipalKindName, { id: string; secret: string }> = {
      partner: await addPartner(db, 'Acme Lending').then((it) => ({ id: it.partnerId, secret: it.apiKey })),
      reviewer: await addReviewer(db, 'Rita').then((it) => ({ id: it.reviewerId, secret: it.credential })),
      'register-reader': await addRegisterReader(db, 'gate').then((it) => ({
        id: it.readerId,
        secret: it.key,
      })),
      'evidence-reporter': await addEvidenceReporter(db, 'gateway').then((it) => ({
        id: it.reporterId,
        secret: it.key,
      })),
      webhook: await addWebhook(db, secretsKey, {
        url: 'https://partners.example.com/hooks',
        events: ['partner.approved'],
      }).then((it) => ({ id: it.webhookId, secret: it.secret })),
    };
    return made;
  };

  it('every kind’s ids and secrets have their prefix and length, across many', async () => {
    const seen = new Set<string>();
    for (let round = 0; round < 20; round += 1) {
      const made = await addEach();
      for (const kind of Object.keys(formats) as PrincipalKindName[]) {
        expect(made[kind].id, kind).toMatch(formats[kind].id);
        expect(made[kind].secret, kind).toMatch(formats[kind].secret);
        seen.add(made[kind].id).add(made[kind].secret);
      }
    }
    expect(seen.size).toBe(20 * 5 * 2);
    expect(Object.keys(formats).sort()).toEqual(Object.keys(principalKinds).sort());
  });

  it('stores only the secret’s hash, or a webhook’s sealed, never the secret', async () => {
    const made = await addEach();
    const hashed = [
      ['partners', 'api_key_hash', made.partner],
      ['reviewers', 'credential_hash', made.reviewer],
      ['register_readers', 'key_hash', made['register-reader']],
      ['evidence_reporters', 'key_hash', made['evidence-reporter']],
    ] as const;
    for (const [table, column, { id, secret }] of hashed) {
      const [row] = await db.query(`SELECT * FROM ${table} WHERE id = $1`, [id]);
      expect(row?.[column], table).toBe(hashSecret(secret));
      expect(JSON.stringify(row), table).not.toContain(secret);
    }
    const [webhook] = await db.query('SELECT * FROM webhooks WHERE id = $1', [made.webhook.id]);
    expect(JSON.stringify(webhook)).not.toContain(made.webhook.secret);
    expect(openSecret(secretsKey, made.webhook.id, webhook!.secret_sealed)).toBe(made.webhook.secret);
    expect(webhook!.events).toEqual(['partner.approved']);
  });

  it('the formats would catch another prefix, length or encoding (negative control)', () => {
    expect(newId('rdr')).not.toMatch(formats.partner.id);
    expect(`${newId('ptn')}x`).not.toMatch(formats.partner.id);
    expect(newSecret('pcs_register')).not.toMatch(formats['evidence-reporter'].secret);
    // base64url where Standard Webhooks writes base64: no padding, so never the webhook's format.
    expect(newSecret('whsec')).not.toMatch(formats.webhook.secret);
    expect(newSecret('whsec', { encoding: 'base64' })).toMatch(formats.webhook.secret);
  });
});
