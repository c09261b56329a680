import { type ApiOperationId, matchPath, operations } from '@partner-lending/spec';
import type { ClientSession, IssuedToken, RecordedExchange } from './session.js';

/** An API call with what the spec says about it. */
export interface ApiCall {
  exchange: RecordedExchange;
  /** The operation the path and method name, if any. */
  operationId?: ApiOperationId;
  /** The scope that operation needs. */
  scope?: string;
  /** The `{partner_id}` of the path, if the path is one of the spec's. */
  partnerId?: string;
  /** The stage token the call carried. */
  token?: IssuedToken;
  /** Method and path template: the "same operation" of retry rules. */
  key: string;
}

/** A session read for judging: the API calls, token requests and tokens, with lookups. */
export interface SessionView {
  readonly session: ClientSession;
  readonly apiCalls: readonly ApiCall[];
  /** Requests to POST /oauth/token. */
  readonly tokenRequests: readonly RecordedExchange[];
  readonly tokens: ReadonlyMap<string, IssuedToken>;
  /** Token request that issued each token, by token reference. */
  readonly issuedBy: ReadonlyMap<string, RecordedExchange>;
}

const pathOf = (target: string) => target.split('?')[0]!;

/**
 * The session as the checks read it: exchanges from outside the run (`outside`: none of its credentials
 * or tokens) are left out, so that no outsider sways a verdict.
 */
export function viewOf(recorded: ClientSession): SessionView {
  const session = recorded.exchanges.some((exchange) => exchange.outside)
    ? { ...recorded, exchanges: recorded.exchanges.filter((exchange) => !exchange.outside) }
    : recorded;
  const tokens = new Map(session.tokens.map((token) => [token.ref, token]));
  const apiCalls: ApiCall[] = [];
  const tokenRequests: RecordedExchange[] = [];
  const issuedBy = new Map<string, RecordedExchange>();
  for (const exchange of session.exchanges) {
    if (exchange.server === 'auth') {
      if (exchange.method === 'POST' && pathOf(exchange.target) === '/oauth/token')
        tokenRequests.push(exchange);
      if (exchange.issued) issuedBy.set(exchange.issued, exchange);
      continue;
    }
    const match = matchPath(pathOf(exchange.target));
    const operationId = match?.methods[exchange.method] as ApiOperationId | undefined;
    const operation = operationId ? operations[operationId] : undefined;
    const token = exchange.bearer?.token ? tokens.get(exchange.bearer.token) : undefined;
    apiCalls.push({
      exchange,
      ...(operationId && operation?.server === 'api' && { operationId, scope: operation.scope }),
      ...(match?.params.partner_id !== undefined && { partnerId: match.params.partner_id }),
      ...(token && { token }),
      key: `${exchange.method} ${operation?.path ?? pathOf(exchange.target)}`,
    });
  }
  return { session, apiCalls, tokenRequests, tokens, issuedBy };
}

/** Scopes a token request asked for: its `scope` parameter, or every authorised scope when it has none. */
export function requestedScopes(exchange: RecordedExchange, authorised: readonly string[]): string[] {
  const scope = exchange.form?.scope;
  if (scope === undefined || scope.trim() === '') return [...authorised];
  return scope.split(' ').filter((item) => item.length > 0);
}

/**
 * What a token request could be granted: the scopes it asked for, narrowed to those the client is
 * authorised for ("Tokens are limited to the scopes authorised for the partner", API documentation
 * §5.5). Empty when it asked only for scopes outside the grant.
 */
export function grantableScopes(exchange: RecordedExchange, authorised: readonly string[]): string[] {
  return requestedScopes(exchange, authorised).filter((scope) => authorised.includes(scope));
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** One line naming an exchange for details: "#12 GET /v3/… → 401 at 3.20 s". */
export function line(exchange: RecordedExchange): string {
  return `#${exchange.seq} ${exchange.method} ${exchange.target} → ${exchange.status || 'no answer'} at ${seconds(exchange.at)}${exchange.bearer?.token ? ` with ${exchange.bearer.token}` : ''}`;
}

/**
 * In a list sorted by `key`, the index of the first item whose key is at least `value` (or, with
 * `after`, greater than it); `list.length` when there is none. Binary search: O(log n).
 */
export function sortedIndex<T>(
  list: readonly T[],
  value: number,
  key: (item: T) => number,
  after = false,
): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    const current = key(list[mid]!);
    if (current < value || (after && current === value)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Index of the first exchange (in arrival order) that arrived at or after `at`; `list.length` if none. */
export const firstAtOrAfter = (list: readonly RecordedExchange[], at: number): number =>
  sortedIndex(list, at, (exchange) => exchange.at);

/**
 * The most API calls the client ever had open at the stage at once (1 for a client that makes one
 * call at a time): how many calls it sets out on together. Calls arrive in order; a call is open from
 * its arrival until its answer was complete.
 */
export function maxConcurrency(apiCalls: readonly ApiCall[]): number {
  const ends = apiCalls.map((call) => Math.max(call.exchange.end, call.exchange.at)).sort((a, b) => a - b);
  let most = apiCalls.length > 0 ? 1 : 0;
  let closed = 0;
  apiCalls.forEach((call, index) => {
    while (closed < ends.length && ends[closed]! <= call.exchange.at) closed += 1;
    most = Math.max(most, index + 1 - closed);
  });
  return most;
}
