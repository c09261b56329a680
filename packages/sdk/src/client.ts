import {
  createStderrLogger,
  createTokenProvider,
  logLevelFromEnv,
  logTokenEvent,
  raceSignal,
  type TokenProviderOptions,
} from '@partner-lending/auth';
import { type ApiOperationId, operations } from '@partner-lending/spec';
import * as openapiFetch from 'openapi-fetch';
import { CallRequest } from './call-request.js';

export type * from './client-types.js';

import type {
  JournalUpdate,
  JournalUpdateInput,
  LoanDraft,
  LoanDraftInput,
  PartnerClient,
  PartnerClientOptions,
  PartnerPathsClient,
  ProductionClientOptions,
  Repayment,
  RepaymentInput,
  RequestOptions,
} from './client-types.js';
import { type Deadline, startCallDeadline } from './deadline.js';
import {
  APIConnectionError,
  ConfigurationError,
  errorFromResponse,
  PartnerApiError,
  ResponseShapeError,
} from './errors.js';
import type { paths } from './generated/openapi.js';
import { checkCallOptions, resolveConnection } from './options.js';
import { fillPath } from './path-fill.js';
import { resources } from './resources.js';
import {
  attemptsOf,
  createTransport,
  defaultSleep,
  type OutgoingRequest,
  type PartnerLogger,
  stopped,
  translateTokenError,
} from './transport.js';

const createClient: typeof openapiFetch.default =
  (openapiFetch.default as unknown as { default?: typeof openapiFetch.default }).default ??
  openapiFetch.default;

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
export function createPartnerClient(
  options: PartnerClientOptions | ProductionClientOptions = {},
): PartnerClient {
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
  if (
    provider !== undefined &&
    provider.environment !== undefined &&
    provider.environment !== connection.environment
  ) {
    throw new ConfigurationError(
      `the tokenProvider was created for environment '${provider.environment}' but this client is for '${connection.environment}': give it a provider of the same environment, so that tokens of one never serve the other.`,
    );
  }
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
      // Named only when the caller chose one, so the cache keys of existing set-ups stay as they were.
      ...(options.environment === undefined ? {} : { environment: connection.environment }),
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
      // The provider's own ConfigurationError is said again in the client's words (its cause kept).
      if (error instanceof PartnerApiError && !(error instanceof ConfigurationError)) throw error;
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
      getToken: (scopes, signal, timeoutMs, minValidityMs) =>
        tokenProvider.getToken(
          minValidityMs === undefined
            ? scopes
              ? { scopes, signal, timeoutMs }
              : { signal, timeoutMs }
            : { ...(scopes ? { scopes } : {}), signal, timeoutMs, minValidityMs },
        ),
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

  const { loans, creator } = resources(call);

  return Object.assign(raw as unknown as PartnerPathsClient, {
    loans,
    loanDrafts: creator<LoanDraftInput, LoanDraft>('createLoanDraft'),
    journals: creator<JournalUpdateInput, JournalUpdate>('createJournalUpdate'),
    repayments: creator<RepaymentInput, Repayment>('createRepayment'),
    tokenProvider,
  });
}
