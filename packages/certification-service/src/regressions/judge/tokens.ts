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
  /** The record's place in the least-recently-seen order when it was last moved to its end. */
  stamp: number;
}

/**
 * Token records by fingerprint, the least recently seen dropped past `max` (Map order: O(1)). A record
 * seen again is moved to the end only when it has drifted into the older half: a record moved less than
 * max/2 moves ago has at least that many moves before it could be dropped, and a token in steady use
 * costs a lookup, not a delete and an insert.
 */
export class TokenRecords {
  private readonly records = new Map<string, TokenRecord>();
  private moves = 0;

  constructor(
    private readonly max: number,
    state: readonly [string, TokenRecord][] = [],
    moves = 0,
  ) {
    for (const [fingerprint, record] of state.slice(-max)) this.records.set(fingerprint, record);
    this.moves = moves;
  }

  /** The record of `fingerprint`, kept among the recent (created when new). */
  touch(fingerprint: string): TokenRecord {
    let record = this.records.get(fingerprint);
    if (record) {
      if (this.moves - record.stamp < this.max / 2) return record;
      this.records.delete(fingerprint);
    } else {
      record = { uses: 0, resent: 0, early: 0, stamp: 0 };
      if (this.records.size >= this.max) {
        const oldest = this.records.keys().next().value as string;
        this.records.delete(oldest);
      }
    }
    record.stamp = this.moves++;
    this.records.set(fingerprint, record);
    return record;
  }

  /** Moves so far (kept in the state, with the records' stamps). */
  get moved(): number {
    return this.moves;
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
