import { randomUUID } from 'node:crypto';

/** Paging of GET …/loans. Not specified by the API documentation; these are the mock's documented choices. */
export const loansPaging = { defaultLimit: 20, maxLimit: 100, defaultOffset: 0 } as const;

export type Loan = Record<string, unknown> & { id: string };

/** Deterministic demo loans: the same partner id always gets the same loans. */
export function demoLoans(partnerId: string, count: number, now: number): Loan[] {
  let hash = 2166136261;
  for (const char of partnerId) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  const statuses = ['active', 'active', 'active', 'repaid', 'in_arrears'] as const;
  return Array.from({ length: count }, (_, index) => {
    const n = (hash + index * 2654435761) >>> 0;
    return {
      id: `loan-${String(index + 1).padStart(4, '0')}`,
      partnerId,
      amount: 500 + (n % 196) * 50,
      currency: 'EUR',
      status: statuses[n % statuses.length]!,
      createdAt: new Date(now - (count - index) * 86_400_000).toISOString(),
    };
  });
}

export type PagingResult = { ok: true; limit: number; offset: number } | { ok: false; description: string };

/** Validates `limit` and `offset`: decimal integers, limit 1–100 (default 20), offset ≥ 0 (default 0). */
export function parsePaging(query: URLSearchParams): PagingResult {
  const read = (name: 'limit' | 'offset', fallback: number, min: number, max: number): number | string => {
    const values = query.getAll(name);
    if (values.length === 0) return fallback;
    if (values.length > 1) return `${name} is given more than once`;
    const value = values[0]!;
    if (!/^\d{1,15}$/.test(value)) return `${name} must be an integer between ${min} and ${max}`;
    const number = Number(value);
    if (number < min || number > max) return `${name} must be an integer between ${min} and ${max}`;
    return number;
  };
  const limit = read('limit', loansPaging.defaultLimit, 1, loansPaging.maxLimit);
  if (typeof limit === 'string') return { ok: false, description: limit };
  const offset = read('offset', loansPaging.defaultOffset, 0, Number.MAX_SAFE_INTEGER);
  if (typeof offset === 'string') return { ok: false, description: offset };
  return { ok: true, limit, offset };
}

/** Limits of the objects kept from creates (oldest dropped first). */
export interface StoreLimits {
  /** Stored objects over all partners. */
  readonly maxStored: number;
  /** Stored objects of one partner. */
  readonly maxStoredPerPartner: number;
  /** UTF-8 bytes of the stored objects' JSON over all partners. */
  readonly maxStoredBytes: number;
}

export const defaultStoreLimits: StoreLimits = {
  maxStored: 10_000,
  maxStoredPerPartner: 1_000,
  maxStoredBytes: 64 * 1024 * 1024,
};

interface StoredObject {
  readonly partnerId: string;
  readonly operationId: string;
  readonly json: Buffer;
}

/**
 * In-memory partner data: demo loans and the objects created through the three create paths. Created
 * objects are kept as their JSON answer, within {@link StoreLimits}: past a limit the oldest go first.
 */
export class PartnerStore {
  readonly #loans = new Map<string, Loan[]>();
  readonly #limits: StoreLimits;
  // Insertion-ordered maps keyed by a sequence number: the first key is the oldest object.
  readonly #all = new Map<number, StoredObject>();
  readonly #byPartner = new Map<string, Map<number, StoredObject>>();
  #next = 0;
  #bytes = 0;

  constructor(
    partnerIds: Iterable<string>,
    loansPerPartner: number,
    now: number,
    limits: StoreLimits = defaultStoreLimits,
  ) {
    for (const partnerId of partnerIds) {
      if (!this.#loans.has(partnerId)) this.#loans.set(partnerId, demoLoans(partnerId, loansPerPartner, now));
    }
    this.#limits = limits;
  }

  has(partnerId: string): boolean {
    return this.#loans.has(partnerId);
  }

  loans(partnerId: string): readonly Loan[] {
    return this.#loans.get(partnerId) ?? [];
  }

  /**
   * Stores a created object under the operation with a generated id, and answers its JSON (the body
   * of the 201). Then drops the oldest objects until every limit holds again.
   */
  create(partnerId: string, operationId: string, body: Record<string, unknown>): Buffer {
    const json = Buffer.from(JSON.stringify({ ...body, id: randomUUID() }));
    const seq = this.#next++;
    const stored = { partnerId, operationId, json };
    this.#all.set(seq, stored);
    let mine = this.#byPartner.get(partnerId);
    if (!mine) {
      mine = new Map();
      this.#byPartner.set(partnerId, mine);
    }
    mine.set(seq, stored);
    this.#bytes += json.length;
    while (mine.size > this.#limits.maxStoredPerPartner) this.#drop(mine.keys().next().value!);
    while (this.#all.size > this.#limits.maxStored || this.#bytes > this.#limits.maxStoredBytes)
      this.#drop(this.#all.keys().next().value!);
    return json;
  }

  #drop(seq: number): void {
    const stored = this.#all.get(seq)!;
    this.#all.delete(seq);
    this.#byPartner.get(stored.partnerId)?.delete(seq);
    this.#bytes -= stored.json.length;
  }

  /** The stored objects of a partner and operation, oldest first. */
  created(partnerId: string, operationId: string): Record<string, unknown>[] {
    return [...(this.#byPartner.get(partnerId)?.values() ?? [])]
      .filter((stored) => stored.operationId === operationId)
      .map((stored) => JSON.parse(stored.json.toString('utf8')) as Record<string, unknown>);
  }

  /** How many objects are stored and their JSON size in bytes. */
  usage(): { readonly items: number; readonly bytes: number } {
    return { items: this.#all.size, bytes: this.#bytes };
  }
}
