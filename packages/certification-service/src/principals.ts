import { type AuditAction, writeAudit } from './audit.js';
import type { Database } from './db/types.js';
import { hashSecret, newId, newSecret } from './secrets.js';

/** What a kind of principal is made of: its id's and secret's prefixes, its table and its audit action. */
interface PrincipalKind {
  id: Parameters<typeof newId>[0];
  secret: Parameters<typeof newSecret>[0];
  /** The secret's encoding (`newSecret`'s, base64url unless said). */
  encoding?: 'base64';
  table: 'partners' | 'reviewers' | 'register_readers' | 'evidence_reporters' | 'webhooks';
  /** The column of the secret's SHA-256, for the kinds that keep only that (a webhook's is sealed). */
  hashColumn?: 'api_key_hash' | 'credential_hash' | 'key_hash';
  action: AuditAction;
}

/**
 * The principals an operator adds, each with an id and a secret shown once: partners (API keys),
 * reviewers (sign-in credentials), register readers and evidence reporters (their keys), and webhooks
 * (a Standard Webhooks signing secret, base64).
 */
export const principalKinds = {
  partner: {
    id: 'ptn',
    secret: 'pcs_key',
    table: 'partners',
    hashColumn: 'api_key_hash',
    action: 'partner.added',
  },
  reviewer: {
    id: 'rev',
    secret: 'pcs_reviewer',
    table: 'reviewers',
    hashColumn: 'credential_hash',
    action: 'reviewer.added',
  },
  'register-reader': {
    id: 'rdr',
    secret: 'pcs_register',
    table: 'register_readers',
    hashColumn: 'key_hash',
    action: 'register-reader.added',
  },
  'evidence-reporter': {
    id: 'evr',
    secret: 'pcs_evidence',
    table: 'evidence_reporters',
    hashColumn: 'key_hash',
    action: 'evidence-reporter.added',
  },
  webhook: { id: 'whk', secret: 'whsec', encoding: 'base64', table: 'webhooks', action: 'webhook.added' },
} as const satisfies Record<string, PrincipalKind>;

export type PrincipalKindName = keyof typeof principalKinds;

/**
 * Adds a principal of `kind`: a new id and secret, its row (`id` and the columns `columns` gives for
 * them: its name and the secret's hash — or, for a webhook, the secret sealed, since the service signs
 * with it again; never the secret itself) and its audit line (actor `admin`, `detail`), in one
 * transaction. The secret is returned once.
 */
export async function addPrincipal(
  db: Database,
  kind: PrincipalKindName,
  columns: (id: string, secret: string) => Record<string, string>,
  detail: Record<string, unknown>,
): Promise<{ id: string; secret: string }> {
  const made: PrincipalKind = principalKinds[kind];
  const id = newId(made.id);
  const secret = newSecret(made.secret, made.encoding ? { encoding: made.encoding } : {});
  // The column names are the callers' own literals, never input; the values are parameters.
  const row = { ...columns(id, secret), id };
  const names = Object.keys(row);
  await db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO ${made.table} (${names.join(', ')}) VALUES (${names.map((_, at) => `$${at + 1}`).join(', ')})`,
      Object.values(row),
    );
    await writeAudit(tx, { actor: 'admin', action: made.action, subject: id, detail });
  });
  return { id, secret };
}

/**
 * Adds a principal known by a name (already checked) whose secret is kept only as its SHA-256: a
 * partner, a reviewer, a register reader or an evidence reporter. The audit line's detail is `{ name }`.
 */
export function addNamedPrincipal(
  db: Database,
  kind: Exclude<PrincipalKindName, 'webhook'>,
  name: string,
): Promise<{ id: string; secret: string }> {
  const column = principalKinds[kind].hashColumn;
  return addPrincipal(db, kind, (_, secret) => ({ name, [column]: hashSecret(secret) }), { name });
}
