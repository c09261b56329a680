import type { Database } from './db/database.js';
import { migrate } from './db/migrations.js';
import { UsageError } from './errors.js';
import { hashSecret, newId, newSecret } from './secrets.js';

const validName = (name: string) => {
  const trimmed = name.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a name with control characters is refused
  if (trimmed.length === 0 || trimmed.length > 100 || /[\u0000-\u001f\u007f]/.test(trimmed))
    throw new UsageError('--name takes 1 to 100 printable characters, e.g. --name "Acme Lending"');
  return trimmed;
};

/** Adds a partner; its API key is returned once and stored only as a hash. */
export async function addPartner(db: Database, name: string): Promise<{ partnerId: string; apiKey: string }> {
  const partnerName = validName(name);
  await migrate(db);
  const partnerId = newId('ptn');
  const apiKey = newSecret('pcs_key');
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO partners (id, name, api_key_hash) VALUES ($1, $2, $3)', [
      partnerId,
      partnerName,
      hashSecret(apiKey),
    ]);
    await tx.query(
      "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('admin', 'partner.added', $1, $2)",
      [partnerId, JSON.stringify({ name: partnerName })],
    );
  });
  return { partnerId, apiKey };
}

/** Adds a reviewer; the sign-in credential is returned once and stored only as a hash. */
export async function addReviewer(
  db: Database,
  name: string,
): Promise<{ reviewerId: string; credential: string }> {
  const reviewerName = validName(name);
  await migrate(db);
  const reviewerId = newId('rev');
  const credential = newSecret('pcs_reviewer');
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO reviewers (id, name, credential_hash) VALUES ($1, $2, $3)', [
      reviewerId,
      reviewerName,
      hashSecret(credential),
    ]);
    await tx.query(
      "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('admin', 'reviewer.added', $1, $2)",
      [reviewerId, JSON.stringify({ name: reviewerName })],
    );
  });
  return { reviewerId, credential };
}
