import { randomUUID } from 'node:crypto';

/** Paging of GET …/loans. The seed shows no defaults or bounds; these are the mock's documented choices. */
export const loansPaging = { defaultLimit: 20, maxLimit: 100, defaultOffset: 0 } as const;

export type Loan = Record<string, unknown> & { id: string };

/** Deterministic demo loans: the same partner id always gets the same loans. */
export function seedLoans(partnerId: string, count: number, now: number): Loan[] {
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

/** In-memory partner data: seeded loans and the objects created through the three create paths. */
export class PartnerStore {
  readonly #loans = new Map<string, Loan[]>();
  readonly #created = new Map<string, Map<string, Record<string, unknown>[]>>();

  constructor(partnerIds: Iterable<string>, loansPerPartner: number, now: number) {
    for (const partnerId of partnerIds) {
      if (!this.#loans.has(partnerId)) this.#loans.set(partnerId, seedLoans(partnerId, loansPerPartner, now));
    }
  }

  has(partnerId: string): boolean {
    return this.#loans.has(partnerId);
  }

  loans(partnerId: string): readonly Loan[] {
    return this.#loans.get(partnerId) ?? [];
  }

  /** Stores a created object under the operation and answers it with a generated id. */
  create(partnerId: string, operationId: string, body: Record<string, unknown>): Record<string, unknown> {
    const stored = { ...body, id: randomUUID() };
    let byOperation = this.#created.get(partnerId);
    if (!byOperation) {
      byOperation = new Map();
      this.#created.set(partnerId, byOperation);
    }
    const list = byOperation.get(operationId) ?? [];
    list.push(stored);
    byOperation.set(operationId, list);
    return stored;
  }

  created(partnerId: string, operationId: string): readonly Record<string, unknown>[] {
    return this.#created.get(partnerId)?.get(operationId) ?? [];
  }
}
