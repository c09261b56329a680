import type { TokenProvider, TokenProviderOptions } from '@partner-lending/auth';
import type { Client, HeadersOptions } from 'openapi-fetch';
import type { components, paths } from './generated/openapi.js';
import type { ConnectionOptions } from './options.js';
import type { ItemsSelector, Page } from './pagination.js';
import type { CallOptions, PartnerLogger } from './transport.js';

export type ApiPaths = Omit<paths, '/oauth/token'>;
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
  /**
   * The vendor's environment: 'staging' (the documented test environment; addresses may come from the
   * `PARTNER_*` variables) or 'production' (see ProductionClientOptions). Default 'staging'.
   */
  environment?: 'staging' | undefined;
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

/**
 * A client of the production environment. Production addresses are given at onboarding, not in the
 * API documentation: `authUrl` and `baseUrl` are required here and never read from `PARTNER_AUTH_URL`,
 * `PARTNER_BASE_URL` or `PARTNER_AUDIENCE` (values a staging set-up leaves behind). A token refusal
 * for a partner not approved for production is a NotApprovedForProductionError.
 */
export interface ProductionClientOptions
  extends Omit<PartnerClientOptions, 'environment' | 'authUrl' | 'baseUrl'> {
  environment: 'production';
  /** The production auth server address. Required; no environment variable. */
  authUrl: string;
  /** The production partner API address. Required; no environment variable. */
  baseUrl: string;
}

// openapi-fetch's CJS build sets `exports.default` without `__esModule`, so from our CJS build the
// function sits one level deeper; from ESM it is the default export itself.
