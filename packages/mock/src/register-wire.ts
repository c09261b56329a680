/**
 * The register's wire format, defined once: what the certification service signs (a compact JWS, `typ`
 * partner-register+jwt, whose payload is a `RegisterPayload`) and what the production gate reads back.
 * The service builds its entries as `RegisterEntry` and signs a `RegisterPayload`; the gate checks a
 * payload field by field (register-document.ts) into the same `RegisterEntry`.
 */

/** A partner's production status in the register, in the order the documentation lists them. */
export const registerStatuses = ['active', 'suspended', 'revoked', 'expired'] as const;

/**
 * `active` while an approval is valid; `suspended` while the service holds the approval on a regression
 * until a reviewer approves a run again (or revokes); `revoked`; `expired` once its `validUntil` passed.
 */
export type RegisterEntryStatus = (typeof registerStatuses)[number];

/** One partner's production status, as the register lists it. */
export interface RegisterEntry {
  readonly partnerId: string;
  readonly name: string;
  readonly status: RegisterEntryStatus;
  /** The approved scopes while `active`; empty otherwise (nothing to grant). */
  readonly scopes: readonly string[];
  readonly validUntil: string | null;
  readonly decisionId: string;
  /** `suspended`: when the suspension began (ISO time), when the register says so. */
  readonly suspendedAt?: string;
}

/** What a signed register says: its issuer, times (epoch seconds), sequence number and entries. */
export interface RegisterPayload {
  readonly iss: string;
  readonly iat: number;
  readonly exp: number;
  /** Strictly increasing over every register the service (all its instances) signs; never reused. */
  readonly seq: number;
  readonly partners: readonly RegisterEntry[];
}

/** The JWS header `typ` of a signed register. */
export const registerType = 'partner-register+jwt';
