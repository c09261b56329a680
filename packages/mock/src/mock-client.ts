import { randomBytes, timingSafeEqual } from 'node:crypto';
import { inspect } from 'node:util';
import { isScope, type Scope, scopes } from '@partner-lending/spec';
import { MockError } from './errors.js';

/** A registered OAuth client of the auth server (one line of the partner administration console). */
export interface MockClient {
  partnerId: string;
  clientId: string;
  clientSecret: string;
  authorizedScopes: string[];
}

const redacted = '[redacted]';

/**
 * Copies a client into a plain object whose secret stays out of `JSON.stringify` and `util.inspect`
 * (non-enumerable `toJSON` and inspect hooks), while `client.clientSecret` and `{ ...client }` keep it.
 */
export function protectClient(client: MockClient): MockClient {
  const copy: MockClient = {
    partnerId: client.partnerId,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    authorizedScopes: [...client.authorizedScopes],
  };
  const safe = () => ({ ...copy, clientSecret: redacted });
  Object.defineProperty(copy, 'toJSON', { value: safe, enumerable: false });
  Object.defineProperty(copy, inspect.custom, {
    value: (_depth: number, options: object) => inspect(safe(), options),
    enumerable: false,
  });
  return copy;
}

const id = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * Demo clients: the first partner has all four scopes, the second `read:loans` and
 * `create:loan_draft`, the third `read:loans` only. Ids and secrets are random per start.
 */
export function demoClients(): MockClient[] {
  const grants: Scope[][] = [[...scopes], ['read:loans', 'create:loan_draft'], ['read:loans']];
  return grants.map((authorizedScopes, index) => ({
    partnerId: `partner-demo${index + 1}-${id(3)}`,
    clientId: `demo${index + 1}-${id(8)}`,
    clientSecret: randomBytes(24).toString('base64url'),
    authorizedScopes,
  }));
}

/** Validates a client registry (from the `clients` option or a `--clients` file). */
export function parseClients(value: unknown, source = 'clients'): MockClient[] {
  const fail = (what: string): never => {
    throw new MockError(
      'ERR_MOCK_CLIENTS',
      `${source}: ${what}. Expected a non-empty JSON array of { partnerId, clientId, clientSecret, authorizedScopes }, with authorizedScopes among ${scopes.join(', ')}.`,
    );
  };
  if (!Array.isArray(value) || value.length === 0) fail('not a non-empty array');
  const clients: MockClient[] = [];
  const seen = new Set<string>();
  (value as unknown[]).forEach((entry, index) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      fail(`entry ${index} is not an object`);
    const { partnerId, clientId, clientSecret, authorizedScopes } = entry as Record<string, unknown>;
    for (const [name, field] of Object.entries({ partnerId, clientId, clientSecret })) {
      if (typeof field !== 'string' || field.length === 0)
        fail(`entry ${index} has no non-empty string ${name}`);
    }
    if (!Array.isArray(authorizedScopes) || !authorizedScopes.every((scope) => isScope(scope)))
      fail(`entry ${index} has authorizedScopes that are not an array of known scopes`);
    if (seen.has(clientId as string)) fail(`entry ${index} repeats a clientId`);
    seen.add(clientId as string);
    clients.push({
      partnerId: partnerId as string,
      clientId: clientId as string,
      clientSecret: clientSecret as string,
      authorizedScopes: [...new Set(authorizedScopes as string[])],
    });
  });
  return clients;
}

/** Constant-time comparison of a presented secret with the registered one. */
export function secretMatches(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
