import { createHash, randomBytes } from 'node:crypto';
import { CompactSign } from 'jose';
import type { Database, Queryable } from '../../db/database.js';
import type { SigningKey } from '../../keys.js';
import { hashSecret } from '../../secrets.js';

/** A partner's production status in the register. */
export type RegisterStatus = 'active' | 'revoked' | 'expired';

export interface RegisterEntry {
  partnerId: string;
  name: string;
  status: RegisterStatus;
  /** The approved scopes while `active`; empty otherwise (nothing to grant). */
  scopes: string[];
  validUntil: string | null;
  decisionId: string;
}

/** The JWS header `typ` of the register. */
export const registerType = 'partner-register+jwt';

/** How long a signed register is valid for: five times its max-age, at least 5 minutes, at most a day. */
export const registerLifetimeSeconds = (maxAgeSeconds: number) =>
  Math.min(86_400, Math.max(300, 5 * maxAgeSeconds));

interface LatestRow {
  id: string;
  partner_id: string;
  name: string;
  decision: 'approved' | 'revoked' | 'expired';
  scopes: string[] | null;
  valid_until: string | Date | null;
}

/**
 * Each partner's standing, from its latest approval, revocation or expiry (a rejection of a later run
 * leaves a standing approval as it is): `active` while an approval is valid — an approval past its
 * `validUntil` reads `expired` at once, before the sweeper records the expiry — else `revoked` or
 * `expired`. A partner with none of these is absent.
 */
export async function registerEntries(
  db: Queryable,
  now: Date,
  partnerId?: string,
): Promise<RegisterEntry[]> {
  const rows = await db.query<LatestRow>(
    `SELECT DISTINCT ON (d.partner_id) d.id, d.partner_id, p.name, d.decision, d.scopes, d.valid_until
     FROM decisions d JOIN partners p ON p.id = d.partner_id
     WHERE d.decision IN ('approved', 'revoked', 'expired')${partnerId === undefined ? '' : ' AND d.partner_id = $1'}
     ORDER BY d.partner_id, d.created_at DESC, d.id DESC`,
    partnerId === undefined ? [] : [partnerId],
  );
  return rows.map((row) => entryOf(row, now));
}

export function entryOf(row: LatestRow, now: Date): RegisterEntry {
  const validUntil = row.valid_until === null ? null : new Date(row.valid_until);
  const status: RegisterStatus =
    row.decision === 'approved'
      ? validUntil !== null && validUntil.getTime() <= now.getTime()
        ? 'expired'
        : 'active'
      : row.decision;
  return {
    partnerId: row.partner_id,
    name: row.name,
    status,
    scopes: status === 'active' ? [...(row.scopes ?? [])].sort() : [],
    validUntil: validUntil ? validUntil.toISOString() : null,
    decisionId: String(row.id),
  };
}

/** Signs a register document: a compact JWS, `typ` partner-register+jwt, with the attestation key. */
export async function signRegister(
  key: Pick<SigningKey, 'privateKey' | 'kid'>,
  payload: { iss: string; iat: number; exp: number; partners: RegisterEntry[] },
): Promise<string> {
  const alg = key.privateKey.asymmetricKeyType === 'ed25519' ? 'EdDSA' : 'ES256';
  return new CompactSign(Buffer.from(JSON.stringify(payload), 'utf8'))
    .setProtectedHeader({ alg, kid: key.kid, typ: registerType })
    .sign(key.privateKey);
}

/**
 * Serves signed registers: one document is signed again only when what it says changed or half its
 * lifetime passed, so its `ETag` (of the JWS bytes) lets a reader revalidate cheaply, and a 304 never
 * hands back a copy close to its `exp`.
 */
export function createRegister(deps: {
  db: Database;
  key: Pick<SigningKey, 'privateKey' | 'kid'>;
  issuer: string;
  maxAgeSeconds: number;
}) {
  const lifetime = registerLifetimeSeconds(deps.maxAgeSeconds);
  const cache = new Map<string, { content: string; iat: number; jws: string; etag: string }>();
  return {
    maxAgeSeconds: deps.maxAgeSeconds,
    /** The signed register (all partners, or one); undefined for a partner that is absent. */
    async document(partnerId?: string): Promise<{ jws: string; etag: string } | undefined> {
      const now = new Date();
      const partners = await registerEntries(deps.db, now, partnerId);
      if (partnerId !== undefined && partners.length === 0) return undefined;
      const content = JSON.stringify(partners);
      const slot = partnerId ?? '*';
      const nowSeconds = Math.floor(now.getTime() / 1000);
      const cached = cache.get(slot);
      if (cached && cached.content === content && nowSeconds - cached.iat < lifetime / 2) return cached;
      const iat = nowSeconds;
      const jws = await signRegister(deps.key, { iss: deps.issuer, iat, exp: iat + lifetime, partners });
      const entry = {
        content,
        iat,
        jws,
        etag: `"${createHash('sha256').update(jws).digest('base64url').slice(0, 32)}"`,
      };
      if (cache.size > 1000) cache.clear();
      cache.set(slot, entry);
      return entry;
    },
  };
}

export type Register = ReturnType<typeof createRegister>;

/** Adds a register reader (the production side); its key is returned once and stored only as a hash. */
export async function addRegisterReader(
  db: Database,
  name: string,
): Promise<{ readerId: string; key: string }> {
  const readerId = `rdr_${randomBytes(12).toString('base64url')}`;
  const key = `pcs_register_${randomBytes(32).toString('base64url')}`;
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO register_readers (id, name, key_hash) VALUES ($1, $2, $3)', [
      readerId,
      name,
      hashSecret(key),
    ]);
    await tx.query(
      "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('admin', 'register-reader.added', $1, $2)",
      [readerId, JSON.stringify({ name })],
    );
  });
  return { readerId, key };
}

/** The reader a register key belongs to, or undefined. */
export async function registerReaderOf(db: Queryable, key: string): Promise<{ id: string } | undefined> {
  const [row] = await db.query<{ id: string }>('SELECT id FROM register_readers WHERE key_hash = $1', [
    hashSecret(key),
  ]);
  return row;
}
