import { createHash } from 'node:crypto';
import { type ApiOperationId, matchPath, type OperationId, operations } from '@partner-lending/spec';
import openapi from '@partner-lending/spec/openapi.json' with { type: 'json' };

/** SHA-256 (hex) of the bundled spec the run judges against, as the reports state it. */
export const specSha256 = createHash('sha256').update(JSON.stringify(openapi)).digest('hex');

/** What the spec documents for one response status of an operation: its media types (empty: no body). */
export type DocumentedResponses = ReadonlyMap<string, ReadonlySet<string>>;

type Json = Record<string, unknown>;
const asObject = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

function resolve(value: unknown): Json | undefined {
  const object = asObject(value);
  const ref = object?.$ref;
  if (typeof ref !== 'string') return object;
  let node: unknown = openapi;
  for (const part of ref.replace(/^#\//, '').split('/')) node = asObject(node)?.[part];
  return asObject(node);
}

const documented = new Map<OperationId, DocumentedResponses>();
for (const pathItem of Object.values(asObject(openapi.paths) ?? {})) {
  for (const operation of Object.values(asObject(pathItem) ?? {})) {
    const id = asObject(operation)?.operationId;
    if (typeof id !== 'string' || !Object.hasOwn(operations, id)) continue;
    const responses = new Map<string, Set<string>>();
    for (const [status, response] of Object.entries(asObject(asObject(operation)?.responses) ?? {})) {
      const content = asObject(resolve(response)?.content) ?? {};
      responses.set(status.toUpperCase(), new Set(Object.keys(content).map((type) => type.toLowerCase())));
    }
    documented.set(id as OperationId, responses);
  }
}

/** The documented responses of an operation (from `@partner-lending/spec/openapi.json`). */
export function documentedResponses(id: OperationId): DocumentedResponses {
  return documented.get(id) ?? new Map();
}

/** The response key documenting `status`: the exact code, its range (`4XX`), or `default`. */
export function documentedStatus(id: OperationId, status: number): string | undefined {
  const responses = documentedResponses(id);
  for (const key of [String(status), `${String(status)[0]}XX`, 'DEFAULT']) if (responses.has(key)) return key;
  return undefined;
}

/**
 * The operation a request addressed: the token endpoint by its URL, an API operation by its path
 * below the base URL and its method. Undefined for anything else (JWKS, discovery documents).
 */
export function operationOf(
  method: string,
  url: string,
  target: { tokenUrl: string; baseUrl: string },
): OperationId | undefined {
  const parsed = new URL(url);
  const token = new URL(target.tokenUrl);
  if (parsed.origin === token.origin && parsed.pathname === token.pathname)
    return method === 'POST' ? 'requestToken' : undefined;
  const base = new URL(target.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  if (parsed.origin !== base.origin || !parsed.pathname.startsWith(`${prefix}/`)) return undefined;
  const match = matchPath(parsed.pathname.slice(prefix.length));
  return match?.methods[method] as ApiOperationId | undefined;
}

/** The create operation a request addresses (a POST to one of the three create paths), if any. */
export function createOperationOf(
  request: { method: string; url: string },
  target: { tokenUrl: string; baseUrl: string },
): ApiOperationId | undefined {
  const id = operationOf(request.method, request.url, target);
  return id && id !== 'requestToken' && operations[id].method !== 'GET' ? (id as ApiOperationId) : undefined;
}
