import { audienceTemplate, operations, scopes } from './generated/operations.js';

export { audienceTemplate, operations, scopes };

/** One of the four access scopes the oauth2 scheme declares (API documentation §2.1). */
export type Scope = (typeof scopes)[number];
/** The operationId of every operation in the spec, the token endpoint included. */
export type OperationId = keyof typeof operations;
/** The operationIds served by the partner API (`{base_url}`), each requiring one scope. */
export type ApiOperationId = {
  [K in OperationId]: (typeof operations)[K]['server'] extends 'api' ? K : never;
}[OperationId];
export type Operation = (typeof operations)[OperationId];

/** The operationIds of the partner API, in spec order. */
export const apiOperationIds = (Object.keys(operations) as OperationId[]).filter(
  (id): id is ApiOperationId => operations[id].server === 'api',
);

/** True when `value` is one of the declared scopes. */
export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (scopes as readonly string[]).includes(value);
}

/** The scope an API operation requires. */
export function scopeFor(id: ApiOperationId): Scope {
  return operations[id].scope;
}

export interface PathMatch {
  /** Path parameters by name, percent-decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** Operations served at this path, by upper-case method. */
  readonly methods: Readonly<Record<string, OperationId>>;
}

interface CompiledTemplate {
  readonly pattern: RegExp;
  readonly names: readonly string[];
  readonly methods: Record<string, OperationId>;
}

const compiled: CompiledTemplate[] = [];
for (const id of Object.keys(operations) as OperationId[]) {
  const { path, method } = operations[id];
  const names: string[] = [];
  const source = path
    .split(/(\{[^}]+\})/)
    .map((part) => {
      if (part.startsWith('{') && part.endsWith('}')) {
        names.push(part.slice(1, -1));
        return '([^/]+)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  const existing = compiled.find((entry) => entry.pattern.source === `^${source}$`);
  if (existing) existing.methods[method] = id;
  else compiled.push({ pattern: new RegExp(`^${source}$`), names, methods: { [method]: id } });
}

/**
 * Finds the path template of the spec that `pathname` (no query string) matches. Returns undefined
 * when no template matches, or when a path parameter is not valid percent-encoding.
 */
export function matchPath(pathname: string): PathMatch | undefined {
  for (const entry of compiled) {
    const found = entry.pattern.exec(pathname);
    if (!found) continue;
    const params: Record<string, string> = {};
    try {
      entry.names.forEach((name, index) => {
        params[name] = decodeURIComponent(found[index + 1] ?? '');
      });
    } catch {
      return undefined;
    }
    return { params, methods: entry.methods };
  }
  return undefined;
}

/** Fills a path template such as `/v3/partner/{partner_id}/loans` with percent-encoded values. */
export function expandPath(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`path parameter ${name} is missing for ${template}`);
    return encodeURIComponent(value);
  });
}
