import {
  createStderrLogger,
  createTokenProvider,
  logLevelFromEnv,
  logTokenEvent,
  raceSignal,
  type TokenProvider,
  type TokenProviderOptions,
} from '@partner-lending/auth';
import { type ApiOperationId, operations } from '@partner-lending/spec';
import type { Client, HeadersOptions } from 'openapi-fetch';
import * as openapiFetch from 'openapi-fetch';
import { CallRequest } from './call-request.js';
import {
  APIConnectionError,
  ConfigurationError,
  errorFromResponse,
  PartnerApiError,
  ResponseShapeError,
} from './errors.js';
import type { components, paths } from './generated/openapi.js';
import { type ConnectionOptions, checkCallOptions, resolveConnection } from './options.js';
import { type ItemsSelector, type Page, pageOf, paginate } from './pagination.js';
import {
  attemptsOf,
  type CallOptions,
  createTransport,
  type Deadline,
  defaultSleep,
  type OutgoingRequest,
  type PartnerLogger,
  startCallDeadline,
  stopped,
  translateTokenError,
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

/**
 * A loan. The API documentation leaves its fields unspecified, so the SDK keeps them open; declare
 * yours once and they flow into `list`, `iterate` and `pages`:
 *
 * ```ts
 * declare module '@partner-lending/sdk' {
 *   interface Loan { id: string; amount: number }
 * }
 * ```
 */
export interface Loan {
  [field: string]: unknown;
}
/** The body of `loanDrafts.create` (open; augment it like `Loan`). */
export interface LoanDraftInput {
  [field: string]: unknown;
}
/** The answer of `loanDrafts.create` (open; augment it like `Loan`). */
export interface LoanDraft {
  [field: string]: unknown;
}
/** The body of `journals.create` (open; augment it like `Loan`). */
export interface JournalUpdateInput {
  [field: string]: unknown;
}
/** The answer of `journals.create` (open; augment it like `Loan`). */
export interface JournalUpdate {
  [field: string]: unknown;
}
/** The body of `repayments.create` (open; augment it like `Loan`). */
export interface RepaymentInput {
  [field: string]: unknown;
}
/** The answer of `repayments.create` (open; augment it like `Loan`). */
export interface Repayment {
  [field: string]: unknown;
}

/** The raw body of a loans page as the spec types it: an array of loans, or an object holding them. */
export type LoansPage = components['schemas']['LoansPage'];
/** A create body or answer: a JSON object whose fields the API documentation does not specify. */
export type OpenObject = components['schemas']['OpenObject'];

/** What `withResponse()` gives: the parsed data with the status, headers and the raw `Response`. */
export interface WithResponse<T> {
  data: T;
  status: number;
  headers: Headers;
  response: Response;
}

/** The promise of every resource method: awaits to the data; `withResponse()` adds the HTTP answer. */
export interface APIPromise<T> extends Promise<T> {
  withResponse(): Promise<WithResponse<T>>;
}

/** Options of every resource method. */
export interface RequestOptions extends CallOptions {
  /** The partner whose path to call. Default: the `partnerId` of the token (your own). */
  partnerId?: string | undefined;
}

export interface ListLoansOptions<Item = Loan> extends RequestOptions {
  /** Loans asked for (`limit`); the server may send fewer. Default: the server's. */
  limit?: number | undefined;
  /** Where to start. Default 0. */
  offset?: number | undefined;
  /**
   * Where the loans are in the body: a property name or a function. Default: the body when it is an
   * array, else its only array-valued property.
   */
  items?: ItemsSelector<LoansPage, Item> | undefined;
}

export interface IterateLoansOptions<Item = Loan> extends RequestOptions {
  /** Loans asked for per request (`limit`). Default 25. */
  pageSize?: number | undefined;
  /** Where to start. Default 0. */
  offset?: number | undefined;
  /** As for `list`. */
  items?: ItemsSelector<LoansPage, Item> | undefined;
}

/**
 * The loans. Like every resource method, each takes the per-call options (`timeoutMs`, `signal`,
 * `maxRetries`, `partnerId`) as its last argument; they may also stand beside the paging options.
 */
export interface LoansResource {
  /** One page of loans (`GET /v3/partner/{partner_id}/loans`): its items and where it sits. */
  list<Item = Loan>(params?: ListLoansOptions<Item>, options?: RequestOptions): APIPromise<Page<Item>>;
  /** Every loan, across pages. */
  iterate<Item = Loan>(
    params?: IterateLoansOptions<Item>,
    options?: RequestOptions,
  ): AsyncGenerator<Item, void, undefined>;
  /** Every page; empty pages are not yielded. */
  pages<Item = Loan>(
    params?: IterateLoansOptions<Item>,
    options?: RequestOptions,
  ): AsyncGenerator<Page<Item>, void, undefined>;
}

export interface CreateResource<Input = OpenObject, Output = OpenObject> {
  /** Sends `body` and returns the parsed answer. Not retried unless `maxRetries` is given. */
  create(body: Input, options?: RequestOptions): APIPromise<Output>;
}

export type PartnerClient = PartnerPathsClient & {
  readonly loans: LoansResource;
  readonly loanDrafts: CreateResource<LoanDraftInput, LoanDraft>;
  readonly journals: CreateResource<JournalUpdateInput, JournalUpdate>;
  readonly repayments: CreateResource<RepaymentInput, Repayment>;
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
  /** Deadline of a whole call in ms: token lookup, attempts, retry waits and the body. Default 30000. */
  timeoutMs?: number | undefined;
  /** Retries of a GET on connection errors, 408, 429 and 5xx, within the deadline. Default 2. */
  maxRetries?: number | undefined;
  /** The fetch to send with (API and token requests). Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined;
  /** Receives debug lines (each answer, each token event) and warnings (each retry). Default: none. */
  logger?: PartnerLogger | undefined;
  /** Headers sent with every API request. */
  headers?: HeadersOptions | undefined;
  /** Use this token provider (e.g. shared by several clients) instead of creating one. */
  tokenProvider?: TokenProvider | undefined;
  /** Passed to the token provider: a shared token store, e.g. `createRedisTokenStore({ url })`. Default: none. */
  store?: TokenProviderOptions['store'];
  /** Passed to the token provider: verify the JWT signature against a JWKS. Default: decode only. */
  verify?: TokenProviderOptions['verify'];
  /** Passed to the token provider: its refresh windows. */
  refresh?: TokenProviderOptions['refresh'];
  /** Passed to the token provider: the token request's retries (`maxRetries`, `baseDelayMs`, …). */
  retry?: TokenProviderOptions['retry'];
  /** Passed to the token provider: the time limit of one token request attempt. Default 10000. */
  tokenRequestTimeoutMs?: number | undefined;
  /** Passed to the token provider: its observability hook. */
  onTokenEvent?: TokenProviderOptions['onEvent'];
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
  // PARTNER_LOG=debug|info|warn: the SDK's and the token provider's log lines on stderr, redacted.
  const envLevel = options.logger ? undefined : logLevelFromEnv(env.PARTNER_LOG);
  const envLogger = envLevel
    ? createStderrLogger(
        envLevel,
        [connection.clientId, connection.clientSecret].filter((item): item is string => !!item),
      )
    : undefined;
  const logger: PartnerLogger | undefined = options.logger ?? envLogger;
  if (
    connection.baseUrl.protocol === 'http:' &&
    !/^(localhost|.*\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i.test(connection.baseUrl.hostname)
  ) {
    // Only reachable with the loud opt-out: say it at run time too, as the auth package does for its URL.
    globalThis.process?.emitWarning?.(
      'dangerouslyAllowInsecureHttp is set: access tokens are sent to the partner API over plain http.',
      { code: 'PARTNER_SDK_INSECURE_HTTP' },
    );
  }
  const now = options.clock ? () => options.clock!.now() : Date.now;

  let provider = options.tokenProvider;
  if (provider !== undefined) {
    const clashing = (['store', 'verify', 'refresh', 'retry', 'tokenRequestTimeoutMs'] as const).filter(
      (name) => options[name] !== undefined,
    );
    if (clashing.length > 0) {
      throw new ConfigurationError(
        `${clashing.join(', ')} configure the token provider the client creates, but a tokenProvider was given: set ${clashing.length === 1 ? 'it' : 'them'} on that provider instead.`,
      );
    }
  } else {
    const onEvent = options.onTokenEvent;
    const debug = options.logger?.debug;
    const envLog = envLogger;
    const providerOptions: TokenProviderOptions = {
      authUrl: connection.authUrl!.href,
      clientId: connection.clientId!,
      clientSecret: connection.clientSecret!,
      audience: connection.audience,
      fetch: baseFetch,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.store ? { store: options.store } : {}),
      ...(options.verify ? { verify: options.verify } : {}),
      ...(options.refresh ? { refresh: options.refresh } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.tokenRequestTimeoutMs !== undefined
        ? { requestTimeoutMs: options.tokenRequestTimeoutMs }
        : {}),
      ...(options.dangerouslyAllowInsecureHttp ? { dangerouslyAllowInsecureHttp: true } : {}),
      ...(onEvent || debug || envLog
        ? {
            onEvent: (event) => {
              onEvent?.(event);
              debug?.(`token: ${event.type}`, { ...event });
              if (envLog) logTokenEvent(envLog, event);
            },
          }
        : {}),
    };
    try {
      provider = createTokenProvider(providerOptions);
    } catch (error) {
      if (error instanceof PartnerApiError) throw error;
      throw new ConfigurationError(
        `The token provider options are invalid: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }
  const tokenProvider = provider;

  /** One frozen scopes array per operation, so the provider resolves its cache key once. */
  const scopesOf = new Map<string, readonly string[] | undefined>();
  for (const id of Object.keys(operations) as ApiOperationId[]) {
    const operation: ApiOperation = operations[id];
    if (operation.server !== 'api') continue;
    scopesOf.set(
      `${operation.method} ${operation.path}`,
      operation.scope ? Object.freeze([operation.scope]) : undefined,
    );
  }

  const transport = createTransport({
    fetch: baseFetch,
    tokens: {
      getToken: (scopes, signal, timeoutMs) =>
        tokenProvider.getToken(scopes ? { scopes, signal, timeoutMs } : { signal, timeoutMs }),
      invalidate: (token) => tokenProvider.invalidate(token),
    },
    origin: `${connection.baseUrl.origin}/`,
    timeoutMs: connection.timeoutMs,
    maxRetries: connection.maxRetries,
    now,
    sleep: options.sleep ?? defaultSleep,
    random: options.random ?? Math.random,
    logger,
  });
  const core = createClient<paths>({
    baseUrl: connection.baseUrl.href.replace(/\/+$/, ''),
    // Redirects are the transport's: same origin followed, another origin refused (RedirectRefusedError).
    redirect: 'manual',
    // One Request per call, built by fetch itself (see call-request.ts).
    Request: CallRequest as unknown as typeof Request,
    // The paths of the spec have one simple parameter ({partner_id}); the filled path is kept per
    // (path, value) instead of being parsed per call (the default serializer was 7 µs of a call).
    pathSerializer: fillPath,
    ...(options.headers ? { headers: options.headers } : {}),
  });

  // One client, one set of credentials, one partner: the id is read from the first token and kept.
  let knownPartnerId: string | undefined;
  const partnerIdFor = async (scopes: readonly string[] | undefined, deadline: Deadline) => {
    if (knownPartnerId !== undefined) return knownPartnerId;
    deadline.phase = 'token';
    try {
      const timeoutMs = Math.max(1, deadline.at - now());
      const token = await tokenProvider.getToken(
        scopes ? { scopes, signal: deadline.signal, timeoutMs } : { signal: deadline.signal, timeoutMs },
      );
      knownPartnerId = token.partnerId;
    } catch (error) {
      if (deadline.signal.aborted || (error as { code?: unknown }).code === 'ERR_TOKEN_TIMEOUT') {
        throw stopped(deadline, undefined, error);
      }
      if (error instanceof PartnerApiError) throw translateTokenError(error, scopes);
      throw error;
    }
    return knownPartnerId;
  };

  // The raw methods: fill partner_id, then send through the transport under one deadline.
  const send = async (
    method: Method,
    path: string,
    init: AnyInit = {},
    sent?: (request: OutgoingRequest) => void,
  ) => {
    // The signal is the transport's to apply (with the deadline), not the Request's.
    const { timeoutMs, maxRetries, signal, baseUrl, ...rest } = init;
    checkCallOptions({ timeoutMs, maxRetries, signal });
    if (baseUrl !== undefined) {
      // openapi-fetch would send to another base URL: the token is for the configured API only.
      let origin: string;
      try {
        origin = new URL(String(baseUrl)).origin;
      } catch {
        origin = 'an invalid URL';
      }
      if (origin !== connection.baseUrl.origin) {
        throw new ConfigurationError(
          `Refusing to send the access token to ${origin}: it only goes to the configured baseUrl (${connection.baseUrl.origin}). Remove the per-call baseUrl, or create a client for that API.`,
        );
      }
    }
    const scopes = scopesOf.get(`${method} ${path}`);
    const deadline = startCallDeadline(timeoutMs ?? connection.timeoutMs, now(), signal);
    let answered: OutgoingRequest | undefined;
    try {
      let params = rest.params;
      if (path.includes('{partner_id}') && params?.path?.partner_id === undefined) {
        const partnerId =
          knownPartnerId ?? (await raceSignal(partnerIdFor(scopes, deadline), deadline.signal));
        params = { ...params, path: { ...params?.path, partner_id: partnerId } };
      }
      // biome-ignore lint/suspicious/noExplicitAny: dispatching by method name on the untyped runtime.
      return await (core as any)[method](path, {
        ...rest,
        ...(baseUrl === undefined ? {} : { baseUrl }),
        params,
        fetch: async (request: OutgoingRequest) => {
          sent?.(request);
          const response = await transport(request, { scopes, deadline, maxRetries });
          answered = request;
          return response;
        },
      });
    } catch (error) {
      if (error instanceof PartnerApiError) throw error;
      // The deadline and the caller's signal also cover the partner id lookup and the body.
      if (deadline.signal.aborted) throw stopped(deadline, answered ?? `${method} ${path}`, error);
      // undici rejects the body with `TypeError: terminated` when the connection drops mid-answer.
      if (answered && error instanceof TypeError) {
        const reason = error.cause instanceof Error ? error.cause.message : error.message;
        throw new APIConnectionError(
          `The connection to the partner API dropped while reading the answer to ${answered.method} ${new URL(answered.url).pathname} (${reason}). Retry the call; check the network if it persists.`,
          { cause: error },
        );
      }
      throw error;
    } finally {
      deadline.clear();
    }
  };
  const raw = { ...core } as unknown as Record<string, unknown>;

  for (const method of METHODS) raw[method] = (path: string, init?: AnyInit) => send(method, path, init);
  raw.request = (method: string, path: string, init?: AnyInit) =>
    send(method.toUpperCase() as Method, path, init);

  /** Calls one operation of the spec; resolves with the parsed body and the answer, or throws. */
  const call = async (
    id: ApiOperationId,
    request: { query?: object; body?: object },
    opts: RequestOptions,
  ): Promise<{ data: unknown; response: Response }> => {
    checkCallOptions(opts as Record<string, unknown>);
    const operation = operations[id];
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
    let sentTo: OutgoingRequest | undefined;
    try {
      result = await send(operation.method, operation.path, init, (request) => {
        sentTo = request;
      });
    } catch (error) {
      if (error instanceof SyntaxError && sentTo) {
        throw new ResponseShapeError(
          `The partner API answered ${operation.method} ${new URL(sentTo.url).pathname} with a body that is not JSON. Check baseUrl (PARTNER_BASE_URL) points at the partner API.`,
          { cause: error },
        );
      }
      throw error;
    }
    const { response } = result;
    if (!response.ok) {
      const { attempts, retryAfterMs, token } = attemptsOf(response);
      throw errorFromResponse(response, result.error, {
        method: operation.method,
        path: sentTo ? new URL(sentTo.url).pathname : operation.path,
        scope: operation.scope,
        attempts,
        retryAfterMs,
        token,
      });
    }
    return { data: result.data, response };
  };

  const apiPromise = <T>(inner: Promise<{ data: unknown; response: Response }>): APIPromise<T> => {
    const promise = inner.then(({ data }) => data as T) as APIPromise<T>;
    // Either form may be the only one awaited: neither leaves an unhandled rejection behind.
    promise.catch(() => {});
    promise.withResponse = () =>
      inner.then(({ data, response }) => ({
        data: data as T,
        status: response.status,
        headers: response.headers,
        response,
      }));
    return promise;
  };

  const fetchPage = (query: { limit?: number; offset?: number }, opts: RequestOptions) =>
    call('listLoans', { query }, opts);

  const loans: LoansResource = {
    list: <Item = Loan>(
      { limit, offset, items, ...inline }: ListLoansOptions<Item> = {},
      last: RequestOptions = {},
    ) => {
      const opts = { ...inline, ...last };
      const query = {
        ...(limit === undefined ? {} : { limit }),
        ...(offset === undefined ? {} : { offset }),
      };
      // Bad options reject the promise (as every failure of a call does) rather than throw.
      const inner = (async () => {
        checkCallOptions({ limit, offset });
        return fetchPage(query, opts);
      })().then(({ data, response }) => ({
        data: pageOf<Item>(data, response, { offset: offset ?? 0, limit, items }),
        response,
      }));
      return apiPromise<Page<Item>>(inner);
    },
    pages: <Item = Loan>(
      { pageSize = DEFAULT_PAGE_SIZE, offset, items, ...inline }: IterateLoansOptions<Item> = {},
      last: RequestOptions = {},
    ) => {
      const opts = { ...inline, ...last };
      checkCallOptions({ ...opts, pageSize, offset });
      return paginate<Item>({
        pageSize,
        offset,
        items,
        fetchPage: (query) => fetchPage(query, opts),
      });
    },
    iterate: async function* <Item = Loan>(
      iterateOptions: IterateLoansOptions<Item> = {},
      last: RequestOptions = {},
    ) {
      for await (const page of loans.pages(iterateOptions, last)) yield* page.items;
    },
  };
  const creator = <Input, Output>(id: ApiOperationId): CreateResource<Input, Output> => ({
    create: (body, opts = {}) => apiPromise<Output>(call(id, { body: body as object }, opts)),
  });

  return Object.assign(raw as unknown as PartnerPathsClient, {
    loans,
    loanDrafts: creator<LoanDraftInput, LoanDraft>('createLoanDraft'),
    journals: creator<JournalUpdateInput, JournalUpdate>('createJournalUpdate'),
    repayments: creator<RepaymentInput, Repayment>('createRepayment'),
    tokenProvider,
  });
}

const filledPaths = new Map<string, string>();
/**
 * Fills `{name}` path parameters (simple style, percent-encoded, as openapi-fetch's default does for
 * a string), remembering up to 1,000 filled paths.
 */
function fillPath(path: string, params: Record<string, unknown> | undefined): string {
  if (params === undefined) return path;
  const partnerId = params.partner_id;
  const cacheable = typeof partnerId === 'string' && Object.keys(params).length === 1;
  const key = cacheable ? `${path}\0${partnerId}` : '';
  if (cacheable) {
    const hit = filledPaths.get(key);
    if (hit !== undefined) return hit;
  }
  const filled = path.replace(/\{([^{}]+)\}/g, (match, name: string) => {
    const value = params[name];
    return value === undefined || value === null ? match : encodeURIComponent(String(value));
  });
  if (cacheable && filledPaths.size < 1_000) filledPaths.set(key, filled);
  return filled;
}
