import type { Database } from './db/database.js';
import { migrate } from './db/migrations.js';
import { UsageError } from './errors.js';
import { addNamedPrincipal } from './principals.js';

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
  const { id, secret } = await addNamedPrincipal(db, 'partner', partnerName);
  return { partnerId: id, apiKey: secret };
}

/** Adds a reviewer; the sign-in credential is returned once and stored only as a hash. */
export async function addReviewer(
  db: Database,
  name: string,
): Promise<{ reviewerId: string; credential: string }> {
  const reviewerName = validName(name);
  await migrate(db);
  const { id, secret } = await addNamedPrincipal(db, 'reviewer', reviewerName);
  return { reviewerId: id, credential: secret };
}
