import { createHash } from 'node:crypto';
import {
  type RegisterEntry,
  type RegisterEntryStatus,
  type RegisterPayload,
  registerType,
} from '@partner-lending/mock';
import { CompactSign } from 'jose';
import type { Database, Queryable } from '../../db/database.js';
import type { SigningKey } from '../../keys.js';
import { addNamedPrincipal } from '../../principals.js';
import { hashSecret } from '../../secrets.js';

// The register's wire format (entry, status, payload, JWS typ) is the production gate's, defined once in
// @partner-lending/mock, which reads what this file signs; test/register-wire.test-d.ts holds them together.
// `suspended` is held on a regression (`--on-regression suspend`) until a reviewer approves a run again
// (or revokes).

/** How long a signed register is valid for: five times its max-age, at least 5 minutes, at most a day. */
export const registerLifetimeSeconds = (maxAgeSeconds: number) =>
  Math.min(86_400, Math.max(300, 5 * maxAgeSeconds));

interface LatestRow {
  id: string;
  partner_id: string;
  name: string;
  decision: 'approved' | 'revoked' | 'expired' | 'suspended';
  scopes: string[] | null;
  valid_until: string | Date | null;
}

/**
 * Each partner's standing, from its latest approval, revocation, expiry or suspension (a rejection of a
 * later run leaves a standing approval as it is): `active` while an approval is valid — an approval past
 * its `validUntil` reads `expired` at once, before the sweeper records the expiry — else `revoked`,
 * `expired` or `suspended` (scopes empty, as for a revocation). A partner with none of these is absent.
 */
export async function registerEntries(
  db: Queryable,
  now: Date,
  partnerId?: string,
): Promise<RegisterEntry[]> {
  const rows = await db.query<LatestRow>(
    `SELECT DISTINCT ON (d.partner_id) d.id, d.partner_id, p.name, d.decision, d.scopes, d.valid_until
     FROM decisions d JOIN partners p ON p.id = d.partner_id
     WHERE d.decision IN ('approved', 'revoked', 'expired', 'suspended')${partnerId === undefined ? '' : ' AND d.partner_id = $1'}
     ORDER BY d.partner_id, d.created_at DESC, d.id DESC`,
    partnerId === undefined ? [] : [partnerId],
  );
  return rows.map((row) => entryOf(row, now));
}

function entryOf(row: LatestRow, now: Date): RegisterEntry {
  const validUntil = row.valid_until === null ? null : new Date(row.valid_until);
  const status: RegisterEntryStatus =
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
  payload: RegisterPayload,
): Promise<string> {
  const alg = key.privateKey.asymmetricKeyType === 'ed25519' ? 'EdDSA' : 'ES256';
  return new CompactSign(Buffer.from(JSON.stringify(payload), 'utf8'))
    .setProtectedHeader({ alg, kid: key.kid, typ: registerType })
    .sign(key.privateKey);
}

/** A signed copy of one register document, as kept in `register_documents`. */
export interface SignedCopy {
  content: string;
  iat: number;
  exp: number;
  seq: number;
  jws: string;
  etag: string;
}

const etagOf = (jws: string) => `"${createHash('sha256').update(jws).digest('base64url').slice(0, 32)}"`;

async function storedCopy(db: Queryable, slot: string): Promise<SignedCopy | undefined> {
  const [row] = await db.query<{
    seq: string | number;
    content: string;
    iat: string | number;
    exp: string | number;
    jws: string;
  }>('SELECT seq, content, iat, exp, jws FROM register_documents WHERE slot = $1', [slot]);
  return row
    ? {
        content: row.content,
        iat: Number(row.iat),
        exp: Number(row.exp),
        seq: Number(row.seq),
        jws: row.jws,
        etag: etagOf(row.jws),
      }
    : undefined;
}

/**
 * Serves signed registers: a document is signed again only when what it says changed, half its
 * lifetime passed, or less than a max-age of it is left — so its `ETag` (of the JWS bytes) lets a
 * reader revalidate cheaply, and no copy is handed out that a reader could hold past its `exp`. Each
 * signing takes the next `seq` under the sequence row's lock, in the transaction that reads the
 * entries, so that a higher `seq` never says something older; the copy is kept in the database, so
 * every instance hands out the newest one (see migration 7).
 */
export function createRegister(deps: {
  db: Database;
  key: Pick<SigningKey, 'privateKey' | 'kid'>;
  issuer: string;
  maxAgeSeconds: number;
}) {
  const lifetime = registerLifetimeSeconds(deps.maxAgeSeconds);
  /** Whether a copy may still be handed out at `now` (epoch seconds) for what it says. */
  const reusable = (copy: SignedCopy | undefined, content: string, now: number): copy is SignedCopy =>
    copy !== undefined &&
    copy.content === content &&
    now - copy.iat < lifetime / 2 &&
    copy.exp - now >= Math.min(deps.maxAgeSeconds, lifetime / 2);
  return {
    maxAgeSeconds: deps.maxAgeSeconds,
    /** The `Cache-Control` max-age of a copy at `now`: never beyond what is left of it. */
    maxAgeOf(copy: { exp: number }, now = Math.floor(Date.now() / 1000)) {
      return Math.max(0, Math.min(deps.maxAgeSeconds, copy.exp - now));
    },
    /** The signed register (all partners, or one); undefined for a partner that is absent. */
    async document(partnerId?: string): Promise<SignedCopy | undefined> {
      const slot = partnerId ?? '*';
      const now = new Date();
      const partners = await registerEntries(deps.db, now, partnerId);
      if (partnerId !== undefined && partners.length === 0) return undefined;
      const stored = await storedCopy(deps.db, slot);
      if (reusable(stored, JSON.stringify(partners), Math.floor(now.getTime() / 1000))) return stored;
      return deps.db.transaction(async (tx) => {
        const [row] = await tx.query<{ seq: string | number }>(
          'UPDATE register_sequence SET seq = seq + 1 WHERE id = 1 RETURNING seq',
        );
        const at = new Date();
        const iat = Math.floor(at.getTime() / 1000);
        const fresh = await registerEntries(tx, at, partnerId);
        if (partnerId !== undefined && fresh.length === 0) return undefined;
        const content = JSON.stringify(fresh);
        // Another instance signed the same while this one waited for the lock: hand out its copy.
        const current = await storedCopy(tx, slot);
        if (reusable(current, content, iat)) return current;
        const payload = {
          iss: deps.issuer,
          iat,
          exp: iat + lifetime,
          seq: Number(row!.seq),
          partners: fresh,
        };
        const jws = await signRegister(deps.key, payload);
        await tx.query(
          `INSERT INTO register_documents (slot, seq, content, iat, exp, jws) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (slot) DO UPDATE SET seq = $2, content = $3, iat = $4, exp = $5, jws = $6`,
          [slot, payload.seq, content, iat, payload.exp, jws],
        );
        return { content, iat, exp: payload.exp, seq: payload.seq, jws, etag: etagOf(jws) };
      });
    },
  };
}

export type Register = ReturnType<typeof createRegister>;

/** Adds a register reader (the production side); its key is returned once and stored only as a hash. */
export async function addRegisterReader(
  db: Database,
  name: string,
): Promise<{ readerId: string; key: string }> {
  const { id, secret } = await addNamedPrincipal(db, 'register-reader', name);
  return { readerId: id, key: secret };
}

/** The reader a register key belongs to, or undefined. */
export async function registerReaderOf(db: Queryable, key: string): Promise<{ id: string } | undefined> {
  const [row] = await db.query<{ id: string }>('SELECT id FROM register_readers WHERE key_hash = $1', [
    hashSecret(key),
  ]);
  return row;
}
