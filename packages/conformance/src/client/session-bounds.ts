import type * as z from 'zod';
import { type ClientSession, formatSession } from './session.js';
import { maxRecordedHeaders, maxSessionBytes, sessionSchema } from './session-schema.js';

/**
 * The recorder's side of the session schema: every bound the reader (`--judge`, `verify`) enforces,
 * applied when the session is assembled, so that a genuine session always reads back. The bounds are
 * read from the schema itself — a bound added there is enforced here without a second list to keep.
 * A shortened string ends with "…[N chars]" (N its length as sent), a shortened list of strings ends
 * with the item "…[N items]", a number out of range is brought to it; each is counted in `clamped`.
 */

/** Internals of a zod 4 schema that the walk reads: its kind, its parts and its checks. */
interface Def {
  type: string;
  innerType?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  checks?: Array<{ _zod: { def: { check: string; maximum?: number; value?: number; inclusive?: boolean } } }>;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** A def's bounds, read once per schema node (a session walks the same nodes 50,000 times). */
const bounds = new WeakMap<Def, Map<string, { value: number; inclusive: boolean } | undefined>>();

function bound(def: Def, check: string): { value: number; inclusive: boolean } | undefined {
  let known = bounds.get(def);
  if (!known) {
    known = new Map();
    bounds.set(def, known);
  }
  if (known.has(check)) return known.get(check);
  const found = readBound(def, check);
  known.set(check, found);
  return found;
}

function readBound(def: Def, check: string): { value: number; inclusive: boolean } | undefined {
  for (const item of def.checks ?? []) {
    const { check: kind, maximum, value, inclusive } = item._zod.def;
    if (kind !== check) continue;
    if (maximum !== undefined) return { value: maximum, inclusive: true };
    if (value !== undefined) return { value, inclusive: inclusive ?? false };
  }
  return undefined;
}

/** A string at most `max` characters long, marked with its length when it was longer. */
export function clampText(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = `…[${text.length} chars]`;
  return marker.length >= max ? text.slice(0, max) : `${text.slice(0, max - marker.length)}${marker}`;
}

class Fitter {
  clamped = 0;

  fit(schema: z.ZodType, value: unknown): unknown {
    const def = defOf(schema);
    switch (def.type) {
      case 'optional':
      case 'nullable':
        return value === undefined || value === null ? value : this.fit(def.innerType!, value);
      case 'string':
        return typeof value === 'string' ? this.text(def, value) : value;
      case 'number':
        return typeof value === 'number' ? this.number(def, value) : value;
      case 'array':
        return Array.isArray(value) ? this.array(def, value) : value;
      case 'record':
        return this.record(def, value);
      case 'object':
        return this.object(def, value);
      default:
        return value;
    }
  }

  private text(def: Def, value: string): string {
    const max = bound(def, 'max_length')?.value;
    if (max === undefined || value.length <= max) return value;
    this.clamped += 1;
    return clampText(value, max);
  }

  private number(def: Def, value: number): number {
    const high = bound(def, 'less_than');
    const low = bound(def, 'greater_than');
    if (high && (high.inclusive ? value > high.value : value >= high.value)) {
      this.clamped += 1;
      return high.value;
    }
    if (low && (low.inclusive ? value < low.value : value <= low.value)) {
      this.clamped += 1;
      return low.value;
    }
    return value;
  }

  private array(def: Def, value: unknown[]): unknown[] {
    const max = bound(def, 'max_length')?.value;
    let items = value;
    if (max !== undefined && value.length > max) {
      this.clamped += 1;
      // A list of strings says how long it was; a list of records is cut (the session counts the rest).
      items =
        defOf(def.element!).type === 'string' && max > 0
          ? [...value.slice(0, max - 1), `…[${value.length} items]`]
          : value.slice(0, max);
    }
    return items.map((item) => this.fit(def.element!, item));
  }

  private record(def: Def, value: unknown): unknown {
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length > maxRecordedHeaders) this.clamped += 1;
    const kept: Record<string, unknown> = {};
    for (const [key, item] of entries.slice(0, maxRecordedHeaders))
      kept[this.fit(def.keyType!, key) as string] = this.fit(def.valueType!, item);
    return kept;
  }

  private object(def: Def, value: unknown): unknown {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const [key, schema] of Object.entries(def.shape ?? {}))
      if (key in out) out[key] = this.fit(schema, out[key]);
    return out;
  }
}

/**
 * The session brought within every bound of the session schema, and how many values that shortened
 * (added to the session's `clamped`). O(size of the session).
 */
export function fitSession(session: ClientSession, maxBytes = maxSessionBytes): ClientSession {
  const fitter = new Fitter();
  const { clamped: before, ...rest } = session;
  const fitted = fitter.fit(sessionSchema, rest) as ClientSession;
  const clamped = (before ?? 0) + fitter.clamped;
  return fitBytes(clamped > 0 ? { ...fitted, clamped } : fitted, maxBytes);
}

/** Below this many exchanges a session cannot reach the file bound: its size is not measured. */
const measuredFrom = 1_000;

/**
 * The session within the file bound the reader enforces (100 MiB): past it, the last exchanges (and
 * the tokens they issued) are counted in `dropped`, not kept — as past the recording cap, which makes
 * every pass "not verified". Only a client that filled every field to its bound meets this.
 */
function fitBytes(session: ClientSession, maxBytes: number): ClientSession {
  if (session.exchanges.length < measuredFrom && maxBytes >= maxSessionBytes) return session;
  const bytes = (value: ClientSession) => Buffer.byteLength(formatSession(value));
  if (bytes(session) <= maxBytes) return session;
  // Each exchange's share of the file, nested two levels deep (an overestimate: a margin, not a search).
  const sizes = session.exchanges.map((exchange) =>
    Math.ceil(Buffer.byteLength(JSON.stringify(exchange, null, 1)) * 1.5 + 16),
  );
  const fixed = bytes({ ...session, exchanges: [], tokens: [] });
  const tokenBytes = session.tokens.map((token) => Buffer.byteLength(JSON.stringify(token, null, 1)) * 1.5);
  let budget = maxBytes - fixed - tokenBytes.reduce((sum, size) => sum + size, 0);
  let kept = 0;
  while (kept < sizes.length && budget - sizes[kept]! >= 0) budget -= sizes[kept++]!;
  for (;;) {
    const seqs = new Set(session.exchanges.slice(0, kept).map((exchange) => exchange.seq));
    const cut: ClientSession = {
      ...session,
      exchanges: session.exchanges.slice(0, kept),
      tokens: session.tokens.filter((token) => seqs.has(token.seq)),
      dropped: session.dropped + (session.exchanges.length - kept),
    };
    if (kept === 0 || bytes(cut) <= maxBytes) return cut;
    kept = Math.floor(kept / 2);
  }
}
