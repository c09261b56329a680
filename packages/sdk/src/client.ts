import {
  type AccessToken,
  createAuthFetch,
  createTokenProvider,
  type GetTokenOptions,
  ScopeNotGrantedError,
  type TokenProvider,
  type TokenProviderOptions,
  TokenRequestError,
} from '@partner-lending/auth';
import { type ApiOperationId, matchPath, operations } from '@partner-lending/spec';
import type { Client, HeadersOptions } from 'openapi-fetch';
import * as openapiFetch from 'openapi-fetch';
import {
  APIConnectionError,
  APIUserAbortError,
  ConfigurationError,
  errorFromResponse,
  PartnerApiError,
  ResponseShapeError,
} from './errors.js';
import type { components, paths } from './generated/openapi.js';
import { type ConnectionOptions, resolveConnection } from './options.js';
import { type ItemsSelector, type Page, paginate } from './pagination.js';
import {
  attemptsOf,
  type CallOptions,
  createTransport,
  defaultSleep,
  type PartnerLogger,
} from './transport.js';

type ApiPaths = Omit<paths, '/oauth/token'>;
type OptionalPartnerId<Op> = Op extends { parameters: { path: { partner_id: string } } }
  ? Omit<Op, 'parameters'> & {
      parameters: Omit<Op['parameters'], 'path'> & {
        path?: Omit<Op['parameters']['path'], 'partner_id'> & { partner_id?: string };
      };
    }
  : Op;

/**
 * The partner API paths of the spec, with `partner_id` optional: the client fills it in from the
 * token's `partnerId` when it is left out.
 */
export type PartnerPaths = {
  [Path in keyof ApiPaths]: { [Key in keyof ApiPaths[Path]]: OptionalPartnerId<ApiPaths[Path][Key]> };
};

/** The typed openapi-fetch client over the partner API paths, with auth, retries and timeouts applied. */
export type PartnerPathsClient = Client<PartnerPaths>;

export type Loan = components['schemas']['Loan'];
export type LoansPage = components['schemas']['LoansPage'];
/** A create body or answer: a JSON object whose fields the source does not specify. */
export type OpenObject = components['schemas']['OpenObject'];

/** Options of every resource method. */
export interface RequestOptions extends CallOptions {
  /** The partner whose path to call. Default: the `partnerId` of the token (your own). */
  partnerId?: string | undefined;
}

export interface ListLoansOptions extends RequestOptions {
  limit?: number | undefined;
  offset?: number | undefined;
}

export interface IterateLoansOptions<Item = Loan> extends RequestOptions {
  /** Loans asked for per request (`limit`). Default 25. */
  pageSize?: number | undefined;
  /** Where to start. Default 0. */
  offset?: number | undefined;
  /**
   * Where the loans are in a page: a property name or a function. Default: the body when it is an
   * array, else its only array-valued property.
   */
  items?: ItemsSelector<LoansPage, Item> | undefined;
}

export interface LoansResource {
  /** One page of loans: the parsed body of `GET /v3/partner/{partner_id}/loans`. */
  list(options?: ListLoansOptions): Promise<LoansPage>;
  /** Every loan, across pages. */
  iterate<Item = Loan>(options?: IterateLoansOptions<Item>): AsyncGenerator<Item, void, undefined>;
  /** Every page (`{ items, body, offset, limit }`); empty pages are not yielded. */
  pages<Item = Loan>(
    options?: IterateLoansOptions<Item>,
  ): AsyncGenerator<Page<LoansPage, Item>, void, undefined>;
}

export interface CreateResource {
  /** Sends `body` and returns the parsed answer. Not retried unless `maxRetries` is given. */
  create(body: OpenObject, options?: RequestOptions): Promise<OpenObject>;
}

export type PartnerClient = PartnerPathsClient & {
  readonly loans: LoansResource;
  readonly loanDrafts: CreateResource;
  readonly journals: CreateResource;
  readonly repayments: CreateResource;
  /** The token provider in use (shared cache; `invalidate()` forces a fresh token). */
  readonly tokenProvider: TokenProvider;
};

export interface PartnerClientOptions extends ConnectionOptions {
  /** Auth server address `{auth_url}`. Env `PARTNER_AUTH_URL`. Required unless `tokenProvider` is given. */
  authUrl?: string | undefined;
  /** Partner API address `{base_url}`. Env `PARTNER_BASE_URL`. Required. */
  baseUrl?: string | undefined;
  /** Token audience. Env `PARTNER_AUDIENCE`. Default: the base URL. */
  audience?: string | undefined;
  /** Env `PARTNER_CLIENT_ID`. Required unless `tokenProvider` is given. */
  clientId?: string | undefined;
  /** Env `PARTNER_CLIENT_SECRET`. Required unless `tokenProvider` is given. Never logged. */
  clientSecret?: string | undefined;
  /** Per-attempt timeout in ms. Default 30000. */
  timeoutMs?: number | undefined;
  /** Retries of a GET on connection errors, timeouts, 408, 429 and 5xx. Default 2. */
  maxRetries?: number | undefined;
  /** The fetch to send with (API and token requests). Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined;
  /** Receives debug lines (each answer) and warnings (each retry). Default: none. */
  logger?: PartnerLogger | undefined;
  /** Headers sent with every API request. */
  headers?: HeadersOptions | undefined;
  /** Use this token provider (e.g. shared by several clients) instead of creating one. */
  tokenProvider?: TokenProvider | undefined;
  /** Where the `PARTNER_*` variables are read. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Time source (epoch ms) for token expiry and `Retry-After` dates. Default `Date`. */
  clock?: { now(): number } | undefined;
  /** How to wait between retries (tests pass a recorder). Default: a timer, cancelled by the signal. */
  sleep?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  /** Source of the retry jitter, in [0, 1). Default `Math.random`. */
  random?: (() => number) | undefined;
}

// openapi-fetch's CJS build sets `exports.default` without `__esModule`, so from our CJS build the
// function sits one level deeper; from ESM it is the default export itself.
const createClient: typeof openapiFetch.default =
  (openapiFetch.default as unknown as { default?: typeof openapiFetch.default }).default ??
  openapiFetch.default;

const DEFAULT_PAGE_SIZE = 25;
type ApiOperation = (typeof operations)[ApiOperationId];
type Method = 'GET' | 'PUT' | 'POST' | 'DELETE' | 'OPTIONS' | 'HEAD' | 'PATCH' | 'TRACE';
const METHODS: readonly Method[] = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'];

// biome-ignore lint/suspicious/noExplicitAny: the typed surface is Client<PartnerPaths>; this is its runtime.
type AnyInit = Record<string, any>;

/**
 * Creates the partner API client. Options fall back to the `PARTNER_*` environment variables. The
 * client fetches, caches and refreshes tokens, asks for the scope each call needs and fills in
 * `partner_id`: a partner never handles a token, a scope or their partner id.
 */
export function createPartnerClient(options: PartnerClientOptions = {}): PartnerClient {
  const env = options.env ?? globalThis.process?.env ?? {};
  const connection = resolveConnection(options, env, options.tokenProvider === undefined);
  const baseFetch = options.fetch ?? globalThis.fetch;
  const now = options.clock ? () => options.clock!.now() : Date.now;

  let tokenProvider = options.tokenProvider;
  if (!tokenProvider) {
    const providerOptions: TokenProviderOptions = {
      authUrl: connection.authUrl!.href,
      clientId: connection.clientId!,
      clientSecret: connection.clientSecret!,
      audience: connection.audience,
      fetch: baseFetch,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.logger?.debug
        ? { onEvent: (event) => options.logger?.debug?.(`token: ${event.type}`, { ...event }) }
        : {}),
    };
    tokenProvider = createTokenProvider(providerOptions);
  }
  const provider = scopeAware(tokenProvider);
  const basePath = connection.baseUrl.pathname.replace(/\/+$/, '');

  /** The operation a request URL and method belong to, from the spec's path templates. */
  const operationOf = (method: string, url: string): ApiOperation | undefined => {
    const { pathname } = new URL(url);
    if (!pathname.startsWith(basePath)) return undefined;
    const id = matchPath(pathname.slice(basePath.length))?.methods[method];
    if (id === undefined || operations[id].server !== 'api') return undefined;
    return operations[id as ApiOperationId];
  };

  const authFetch = createAuthFetch(provider, {
    fetch: baseFetch,
    scopesFor: (request) => {
      const scope = operationOf(request.method, request.url)?.scope;
      return scope ? [scope] : undefined;
    },
    insufficientScope: 'return',
  });
  const transport = createTransport({
    fetch: (url, init) => authFetch(url, init),
    timeoutMs: connection.timeoutMs,
    maxRetries: connection.maxRetries,
    now,
    sleep: options.sleep ?? defaultSleep,
    random: options.random ?? Math.random,
    logger: options.logger,
  });
  const core = createClient<paths>({
    baseUrl: connection.baseUrl.href,
    fetch: (request) => transport(request),
    ...(options.headers ? { headers: options.headers } : {}),
  });

  // One client, one set of credentials, one partner: the id is read from the first token and kept,
  // so later calls skip this extra token lookup (the auth fetch still checks the scope before sending).
  let knownPartnerId: string | undefined;
  const partnerIdFor = async (scope: string | null | undefined, signal: AbortSignal | undefined) => {
    if (knownPartnerId !== undefined) return knownPartnerId;
    const token: AccessToken = await provider.getToken({
      ...(scope ? { scopes: [scope] } : {}),
      ...(signal ? { signal } : {}),
    });
    knownPartnerId = token.partnerId;
    return knownPartnerId;
  };

  // The raw methods: fill partner_id, then send through the transport with the call's options.
  const send = async (
    method: Method,
    path: string,
    init: AnyInit = {},
    sent?: (request: Request) => void,
  ) => {
    // The signal is the transport's to apply (per attempt, with the timeout), not the Request's.
    const { timeoutMs, maxRetries, signal, ...rest } = init;
    const call: CallOptions = { signal, timeoutMs, maxRetries };
    let answered: Request | undefined;
    try {
      let params = rest.params;
      if (path.includes('{partner_id}') && params?.path?.partner_id === undefined) {
        const operation = Object.values(operations).find((op) => op.path === path && op.method === method);
        const partnerId = await partnerIdFor(operation?.scope, signal);
        params = { ...params, path: { ...params?.path, partner_id: partnerId } };
      }
      // biome-ignore lint/suspicious/noExplicitAny: dispatching by method name on the untyped runtime.
      return await (core as any)[method](path, {
        ...rest,
        params,
        fetch: async (request: Request) => {
          sent?.(request);
          const response = await transport(request, call);
          answered = request;
          return response;
        },
      });
    } catch (error) {
      // The caller's signal also covers the first token lookup and the reading of the body, which
      // reject with the signal's bare reason: report them as the transport reports an abort.
      if (signal?.aborted && !(error instanceof PartnerApiError)) {
        throw new APIUserAbortError(undefined, { cause: signal.reason });
      }
      // undici rejects the body with `TypeError: terminated` when the connection drops mid-answer.
      if (answered && error instanceof TypeError) {
        const reason = error.cause instanceof Error ? error.cause.message : error.message;
        throw new APIConnectionError(
          `The connection to the partner API dropped while reading the answer to ${answered.method} ${new URL(answered.url).pathname} (${reason}). Retry the call; check the network if it persists.`,
          { cause: error },
        );
      }
      throw error;
    }
  };
  const raw = { ...core } as unknown as Record<string, unknown>;
  for (const method of METHODS) raw[method] = (path: string, init?: AnyInit) => send(method, path, init);
  raw.request = (method: string, path: string, init?: AnyInit) =>
    send(method.toUpperCase() as Method, path, init);

  /** Calls one operation of the spec; returns the parsed body or throws the matching error. */
  const call = async (
    id: ApiOperationId,
    request: { query?: object; body?: object },
    opts: RequestOptions,
  ) => {
    const operation = operations[id];
    let sent: Request | undefined;
    const init: AnyInit = {
      params: {
        path: opts.partnerId === undefined ? {} : { partner_id: opts.partnerId },
        ...(request.query ? { query: request.query } : {}),
      },
      ...(request.body ? { body: request.body } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      timeoutMs: opts.timeoutMs,
      maxRetries: opts.maxRetries,
    };
    let result: { data?: unknown; error?: unknown; response: Response };
    try {
      result = await send(operation.method, operation.path, init, (request) => {
        sent = request;
      });
    } catch (error) {
      if (error instanceof SyntaxError && sent) {
        throw new ResponseShapeError(
          `The partner API answered ${operation.method} ${new URL(sent.url).pathname} with a body that is not JSON. Check baseUrl (PARTNER_BASE_URL) points at the partner API.`,
          { cause: error },
        );
      }
      throw error;
    }
    const { response } = result;
    if (!response.ok) {
      const { attempts, retryAfterMs } = attemptsOf(response);
      throw errorFromResponse(response, result.error, {
        method: operation.method,
        path: sent ? new URL(sent.url).pathname : operation.path,
        scope: operation.scope,
        attempts,
        retryAfterMs,
      });
    }
    return result.data;
  };

  const checkPageSize = (pageSize: number) => {
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new ConfigurationError(
        `pageSize ${pageSize} is not a whole number ≥ 1; pass e.g. ${DEFAULT_PAGE_SIZE} (the default).`,
      );
    }
  };

  const loans: LoansResource = {
    list: async ({ limit, offset, ...opts } = {}) => {
      const query = {
        ...(limit === undefined ? {} : { limit }),
        ...(offset === undefined ? {} : { offset }),
      };
      return (await call('listLoans', { query }, opts)) as LoansPage;
    },
    pages: <Item = Loan>({
      pageSize = DEFAULT_PAGE_SIZE,
      offset,
      items,
      ...opts
    }: IterateLoansOptions<Item> = {}) => {
      checkPageSize(pageSize);
      return paginate<LoansPage, Item>({
        pageSize,
        offset,
        items,
        fetchPage: async (query) => (await call('listLoans', { query }, opts)) as LoansPage,
      });
    },
    iterate: async function* <Item = Loan>(iterateOptions: IterateLoansOptions<Item> = {}) {
      for await (const page of loans.pages(iterateOptions)) yield* page.items;
    },
  };
  const creator = (id: ApiOperationId): CreateResource => ({
    create: async (body, opts = {}) => (await call(id, { body }, opts)) as OpenObject,
  });

  return Object.assign(raw as unknown as PartnerPathsClient, {
    loans,
    loanDrafts: creator('createLoanDraft'),
    journals: creator('createJournalUpdate'),
    repayments: creator('createRepayment'),
    tokenProvider: provider,
  });
}

/**
 * The provider, with one translation: a token endpoint that refuses a requested scope outright
 * (400 `invalid_scope`, which RFC 6749 §5.2 allows instead of granting less) means the scope is not
 * granted to this partner, so the caller gets the same ScopeNotGrantedError as for a narrowed grant.
 */
function scopeAware(provider: TokenProvider): TokenProvider {
  return {
    async getToken(request?: GetTokenOptions) {
      try {
        return await provider.getToken(request);
      } catch (error) {
        if (
          error instanceof TokenRequestError &&
          error.error === 'invalid_scope' &&
          request?.scopes?.length
        ) {
          throw new ScopeNotGrantedError([...request.scopes], []);
        }
        throw error;
      }
    },
    invalidate: (token) => provider.invalidate(token),
  };
}
