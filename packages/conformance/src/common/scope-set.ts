import { type Scope, scopes } from '@partner-lending/spec';

/** Splits a space-separated scope string (RFC 6749 §3.3). */
export function parseScopeString(value: string): string[] {
  return value.split(' ').filter((item) => item.length > 0);
}

/** Parses `--expect-scopes`: values separated by spaces or commas. */
export function parseScopeList(value: string): string[] {
  return [...new Set(value.split(/[\s,]+/).filter((item) => item.length > 0))];
}

/** Every non-empty subset of `items`, smallest first, each in the order of `items` (15 for the four scopes). */
export function nonEmptySubsets<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let mask = 1; mask < 1 << items.length; mask += 1)
    out.push(items.filter((_, index) => (mask & (1 << index)) !== 0));
  return out.sort((a, b) => a.length - b.length);
}

/** a ∩ b in the spec's scope order. */
export function intersect(a: readonly string[], b: readonly string[]): Scope[] {
  return scopes.filter((scope) => a.includes(scope) && b.includes(scope));
}

/** Same set, whatever the order and duplicates. */
export function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((item) => sb.has(item));
}

/** A scope list for messages: `{read:loans create:loan_draft}`, `{}` when empty. */
export function formatScopes(values: readonly string[]): string {
  return `{${values.join(' ')}}`;
}
