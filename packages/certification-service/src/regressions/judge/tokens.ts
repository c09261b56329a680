import type { Exchange } from '../../evidence/exchange.js';

/** What the judge keeps of one token (by fingerprint): a few numbers, and the refusal it is judged on. */
export interface TokenRecord {
  /** When its issue was seen; absent for a token issued before the judge's history. */
  issuedAt?: number;
  expiresAt?: number;
  scopes?: string;
  /** API calls that presented it. */
  uses: number;
  /** Its first 401 invalid_token while not expired (revoked), and the presentations after it. */
  refused?: Exchange;
  resent: number;
  /** The 429/503 with Retry-After it got: the wait runs until `waitUntil`; `early` calls before it. */
  waitAnswer?: Exchange | undefined;
  waitUntil?: number | undefined;
  early: number;
}

/** Token records by fingerprint, the least recently seen dropped past `max` (Map order: O(1)). */
export class TokenRecords {
  private readonly records = new Map<string, TokenRecord>();

  constructor(
    private readonly max: number,
    state: readonly [string, TokenRecord][] = [],
  ) {
    for (const [fingerprint, record] of state.slice(-max)) this.records.set(fingerprint, record);
  }

  /** The record of `fingerprint`, made most recent (created when new). */
  touch(fingerprint: string): TokenRecord {
    let record = this.records.get(fingerprint);
    if (record) this.records.delete(fingerprint);
    else {
      record = { uses: 0, resent: 0, early: 0 };
      if (this.records.size >= this.max) {
        const oldest = this.records.keys().next().value as string;
        this.records.delete(oldest);
      }
    }
    this.records.set(fingerprint, record);
    return record;
  }

  /** Without making it recent. */
  peek(fingerprint: string): TokenRecord | undefined {
    return this.records.get(fingerprint);
  }

  get size(): number {
    return this.records.size;
  }

  state(): [string, TokenRecord][] {
    return [...this.records];
  }
}

/** A fingerprint shortened for a finding's line (it is a keyed hash, never a token). */
export const shortFingerprint = (fingerprint: string) =>
  fingerprint.length > 12 ? `${fingerprint.slice(0, 12)}…` : fingerprint;
