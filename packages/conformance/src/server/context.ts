import { isIP } from 'node:net';
import { type ApiOperationId, expandPath, operations, scopeFor, scopes } from '@partner-lending/spec';
import type { JWK } from 'jose';
import { bearerChallengeOf } from '../common/bearer-challenge.js';
import { decodeJwt } from '../common/jwt.js';
import { isLoopbackHost } from '../common/loopback.js';
import type { Redactor, Secret } from '../common/redact.js';
import { parseScopeString } from '../common/scope-set.js';
import { ConformanceError } from '../errors.js';
import { curlLine } from './curl-line.js';
import { SuiteIssuer } from './forgery/suite-issuer.js';
import { cite } from './http/evidence.js';
import type { Exchange, HttpProbe, ProbeRequest } from './http/probe.js';
import { errorCodeOf, jsonObject } from './http/probe.js';
import type { ApiCall, CheckSettings, Target, TokenOutcome } from './target.js';

export type { ApiCall, CheckSettings, Target, TokenOutcome } from './target.js';

/** What every check gets: the target, the HTTP probe, the tokens of the run and helpers. */
export class CheckContext {
  readonly target: Target;
  readonly settings: CheckSettings;
  readonly probe: HttpProbe;
  readonly redactor: Redactor;
  /** Every exchange of the run, in order. */
  readonly exchanges: Exchange[];
  /** Wall clock in epoch ms. */
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  #main: TokenOutcome | undefined;
  /** Whether token requests also send RFC 8707 `resource` (set by the preflight when only that works). */
  useResource = false;
  /** What the preflight learned the hard way (a refused all-scopes ask, a `resource` parameter…). */
  readonly preflightNotes: string[] = [];
  /** The preflight's first ask, for every scope: what scope-authorised-set judges. */
  allScopesAsk: TokenOutcome | undefined;
  readonly #tokens = new Map<string, Promise<TokenOutcome>>();
  readonly #memo = new Map<string, Promise<unknown>>();

  constructor(init: {
    target: Target;
    settings: CheckSettings;
    probe: HttpProbe;
    redactor: Redactor;
    exchanges: Exchange[];
    now: () => number;
    sleep: (ms: number) => Promise<void>;
  }) {
    this.target = init.target;
    this.settings = init.settings;
    this.probe = init.probe;
    this.redactor = init.redactor;
    this.exchanges = init.exchanges;
    this.now = init.now;
    this.sleep = init.sleep;
  }

  /** The preflight token: every scope requested. A check that reads it judged it: it is cited as evidence. */
  get main(): TokenOutcome {
    if (!this.#main?.accessToken)
      throw new ConformanceError('ERR_PREFLIGHT', 'the preflight found no token; no check can run');
    cite(this.#main.exchange);
    return this.#main;
  }

  set main(outcome: TokenOutcome) {
    this.#main = outcome;
    this.#tokens.set(this.#key(outcome.requested, outcome.audience), Promise.resolve(outcome));
  }

  /** The authorised set A: what asking for all four scopes gave. */
  get authorised(): string[] {
    return this.main.granted ?? [];
  }

  /** The partner id of the tested client (response `partnerId`, else the claim). */
  get partnerId(): string {
    const fromBody = this.main.body?.partnerId;
    const fromClaim = this.main.jwt?.payload.partnerId;
    const id = typeof fromBody === 'string' ? fromBody : fromClaim;
    if (typeof id !== 'string')
      throw new ConformanceError(
        'ERR_PREFLIGHT',
        'the token response holds no partnerId (API documentation §2.2)',
      );
    return id;
  }

  /** The form of a client-credentials token request (API documentation §2.1), credentials in the body. */
  tokenForm(
    options: {
      scopes?: readonly string[] | undefined;
      audience?: string;
      client?: { clientId: Secret; clientSecret: Secret };
    } = {},
  ): [string, string][] {
    const client = options.client ?? this.target;
    const form: [string, string][] = [
      ['grant_type', 'client_credentials'],
      ['client_id', client.clientId.reveal()],
      ['client_secret', client.clientSecret.reveal()],
      ['audience', options.audience ?? this.target.audience],
    ];
    if (options.scopes !== undefined) form.push(['scope', options.scopes.join(' ')]);
    // RFC 8707: some servers ignore `audience` and take the API from `resource`; the preflight found so.
    if (this.useResource) form.push(['resource', options.audience ?? this.target.audience]);
    return form;
  }

  /** Sends a token request with the given form. */
  postToken(
    form: ReadonlyArray<readonly [string, string]>,
    headers?: Record<string, string>,
  ): Promise<Exchange> {
    return this.probe.send({
      method: 'POST',
      url: this.target.tokenUrl,
      form,
      ...(headers ? { headers } : {}),
    });
  }

  /** Requests a fresh token (never cached). */
  async requestToken(
    options: { scopes?: readonly string[] | undefined; audience?: string } = {},
  ): Promise<TokenOutcome> {
    const audience = options.audience ?? this.target.audience;
    const exchange = await this.postToken(this.tokenForm(options));
    return this.readToken(exchange, options.scopes, audience);
  }

  /** Reads a token answer; registers the token with the redactor. */
  readToken(exchange: Exchange, requested: readonly string[] | undefined, audience: string): TokenOutcome {
    const body = jsonObject(exchange);
    const raw = body?.access_token;
    const accessToken =
      exchange.status === 200 && typeof raw === 'string' && raw.length > 0 ? raw : undefined;
    if (accessToken) {
      this.redactor.addToken(accessToken);
      this.#issued.set(accessToken, requested);
    }
    const scope = body?.scope;
    const granted = !accessToken
      ? undefined
      : typeof scope === 'string'
        ? parseScopeString(scope)
        : requested === undefined
          ? undefined
          : [...requested];
    return {
      exchange,
      requested,
      audience,
      accessToken,
      body,
      jwt: accessToken ? decodeJwt(accessToken) : undefined,
      granted,
    };
  }

  #key(requested: readonly string[] | undefined, audience: string): string {
    return `${audience}|${requested === undefined ? '-' : requested.join(' ')}`;
  }

  /** A token for exactly this request, shared between checks (one request per distinct ask); cited as evidence. */
  async tokenFor(
    requested: readonly string[] | undefined,
    audience = this.target.audience,
  ): Promise<TokenOutcome> {
    const key = this.#key(requested, audience);
    let outcome = this.#tokens.get(key);
    if (!outcome) {
      outcome = this.requestToken({ scopes: requested, audience });
      this.#tokens.set(key, outcome);
    }
    const result = await outcome;
    cite(result.exchange);
    return result;
  }

  /** Cites an exchange as evidence of the running check (one judged from a shared request). */
  cite(exchange: Exchange | undefined): void {
    cite(exchange);
  }

  /**
   * The positive control of the API, shared by every check that counts a refusal: GET loans of the
   * tested partner with the preflight token gets 2xx — or, for a client without read:loans, 403
   * insufficient_scope (the token was accepted, the scope was not). Anything else (401: the API refuses
   * valid tokens; 404/405: the route is not there, e.g. a wrong base path; 5xx) means a refusal on this
   * route proves nothing.
   */
  async apiControl(): Promise<{ ok: true } | { ok: false; reason: string }> {
    const result = await this.memo('api-control', async () => {
      const exchange = await this.callApi('listLoans');
      const works = this.canRead
        ? isSuccess(exchange)
        : exchange.status === 403 && this.bearerError(exchange) === 'insufficient_scope';
      return { exchange, works };
    });
    cite(result.exchange);
    if (result.works) return { ok: true };
    const wanted = this.canRead ? '2xx' : '403 insufficient_scope (the client lacks read:loans)';
    const hint =
      result.exchange.status === 404 || result.exchange.status === 405
        ? ' — the route was not reached: is --base-url the address of the partner API?'
        : result.exchange.status === 401
          ? ' — the API refuses a valid token, so a refusal of a bad one proves nothing'
          : '';
    return {
      ok: false,
      reason: `the positive control failed: GET loans with a valid token got ${this.describe(result.exchange)}, expected ${wanted}${hint}`,
    };
  }

  /**
   * The positive control of one API route: GET loans is {@link apiControl}; a create endpoint (only with
   * --allow-writes: the call writes) must answer 2xx to a token holding its scope.
   */
  async routeControl(id: ApiOperationId): Promise<{ ok: true } | { ok: false; reason: string }> {
    if (operations[id].method === 'GET') return this.apiControl();
    const label = `${operations[id].method} ${operations[id].path}`;
    if (!this.settings.allowWrites)
      return {
        ok: false,
        reason: `${label} is a create endpoint: it gets no request with a body without --allow-writes`,
      };
    const scope = scopeFor(id);
    if (!this.authorised.includes(scope))
      return {
        ok: false,
        reason: `the client is not authorised for ${scope}: nothing shows that ${label} works with a valid token`,
      };
    const call = await this.scopedCall(id);
    const result = {
      exchange: call.exchange ?? call.token.exchange,
      works: !!call.exchange && isSuccess(call.exchange),
    };
    return result.works
      ? { ok: true }
      : {
          ok: false,
          reason: `the positive control failed: ${label} with a token holding ${scope} got ${this.describe(result.exchange)}, expected 2xx`,
        };
  }

  /**
   * One call of an operation with a token asked for exactly its scope, shared by the checks (a create
   * call writes: made once per run, only with --allow-writes). `exchange` is undefined when no token
   * was issued.
   */
  async scopedCall(id: ApiOperationId): Promise<{ token: TokenOutcome; exchange: Exchange | undefined }> {
    const result = await this.memo(`scoped-call ${id}`, async () => {
      const token = await this.tokenFor([scopeFor(id)]);
      const exchange = token.accessToken ? await this.callApi(id, { token: token.accessToken }) : undefined;
      return { token, exchange };
    });
    cite(result.token.exchange);
    cite(result.exchange);
    return result;
  }

  /**
   * The positive control of the token endpoint, shared by every check that counts a refusal there: the
   * same request with the right credentials (asking for A) gets a token in this run.
   */
  async tokenControl(): Promise<{ ok: true; outcome: TokenOutcome } | { ok: false; reason: string }> {
    const outcome = await this.tokenFor(this.authorised.length > 0 ? this.authorised : undefined);
    if (outcome.accessToken) return { ok: true, outcome };
    return {
      ok: false,
      reason: `the positive control failed: the same token request with the right credentials got ${this.describe(outcome.exchange)}, not a token — a refusal of a bad request proves nothing`,
    };
  }

  /**
   * A token that lacks `scope` but is otherwise usable: A without it, or (when A is only that scope)
   * an empty-scope token if the server issues one. Undefined when the server issues no such token.
   */
  async tokenWithout(scope: string): Promise<TokenOutcome | undefined> {
    const rest = this.authorised.filter((item) => item !== scope);
    if (!this.authorised.includes(scope)) return this.main;
    const candidates: string[][] = rest.length > 0 ? [rest] : [scopes.filter((item) => item !== scope)];
    for (const ask of candidates) {
      const outcome = await this.tokenFor(ask);
      if (outcome.accessToken && !(outcome.granted ?? []).includes(scope)) return outcome;
    }
    return undefined;
  }

  #issuer: Promise<SuiteIssuer> | undefined;

  /**
   * The suite's own issuer, started on first use: on loopback for a loopback target, on --listen's host
   * otherwise. Where the target could not reach it, the reason instead.
   */
  async issuer(): Promise<{ issuer: SuiteIssuer } | { issuer: undefined; reason: string }> {
    const api = new URL(this.target.baseUrl).hostname;
    const listen = this.settings.listen;
    if (!listen && !isLoopbackHost(api))
      return {
        issuer: undefined,
        reason: `the target ${api} cannot reach the suite's issuer on this machine's loopback address; give --listen HOST with an address of this machine that the target can reach`,
      };
    if (!this.#issuer) {
      const host = listen ?? '127.0.0.1';
      this.#issuer = SuiteIssuer.start({ host: isIP(host) ? host : '0.0.0.0', advertise: host });
    }
    try {
      return { issuer: await this.#issuer };
    } catch (error) {
      return {
        issuer: undefined,
        reason: `the suite's issuer could not listen on ${listen ?? '127.0.0.1'}: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
  }

  /** Stops what the context started (the suite's issuer). */
  async close(): Promise<void> {
    const issuer = await this.#issuer?.catch(() => undefined);
    await issuer?.close();
  }

  /** Runs `fn` once per key for the whole run: checks that judge the same answers share the requests. */
  memo<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let value = this.#memo.get(key) as Promise<T> | undefined;
    if (!value) {
      value = fn();
      this.#memo.set(key, value);
    }
    return value;
  }

  /**
   * The auth server's key set: the known JWKS URL, else `jwks_uri` of the RFC 8414 / OpenID metadata,
   * else `/.well-known/jwks.json`. Undefined when none answers with a key set.
   */
  jwks(): Promise<{ url: string; keys: JWK[] } | undefined> {
    return this.memo('jwks', async () => {
      const base = this.target.authUrl.replace(/\/+$/, '');
      const candidates: string[] = [];
      if (this.settings.jwksUrl) candidates.push(this.settings.jwksUrl);
      else {
        for (const doc of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
          const exchange = await this.probe
            .send({ method: 'GET', url: `${base}${doc}` })
            .catch(() => undefined);
          const uri = exchange && exchange.status === 200 ? jsonObject(exchange)?.jwks_uri : undefined;
          if (typeof uri === 'string') candidates.push(uri);
        }
        candidates.push(`${base}/.well-known/jwks.json`);
      }
      for (const url of candidates) {
        const exchange = await this.probe.send({ method: 'GET', url }).catch(() => undefined);
        const keys = exchange && exchange.status === 200 ? jsonObject(exchange)?.keys : undefined;
        if (Array.isArray(keys) && keys.length > 0) return { url, keys: keys as JWK[] };
      }
      return undefined;
    });
  }

  /** True when the tested client may read loans: the GET is the positive control that writes nothing. */
  get canRead(): boolean {
    return this.authorised.includes('read:loans');
  }

  /** The URL of an API operation for a partner (default: the tested one). */
  apiUrl(id: ApiOperationId, partnerId = this.partnerId, query?: Record<string, string>): string {
    const base = this.target.baseUrl.replace(/\/+$/, '');
    const url = new URL(`${base}${expandPath(operations[id].path, { partner_id: partnerId })}`);
    for (const [name, value] of Object.entries(query ?? {})) url.searchParams.set(name, value);
    return url.toString();
  }

  /** Calls an API operation. Create operations get a `{}` JSON body unless a body is given. */
  callApi(id: ApiOperationId, call: ApiCall = {}): Promise<Exchange> {
    const { method } = operations[id];
    const headers: Record<string, string> = { ...call.headers };
    const authorization =
      call.authorization === undefined ? `Bearer ${call.token ?? this.main.accessToken}` : call.authorization;
    if (authorization !== null) headers.authorization = authorization;
    const request: ProbeRequest = { method, url: this.apiUrl(id, call.partnerId, call.query), headers };
    if (call.form !== undefined) request.form = call.form;
    else if (call.json !== undefined) request.json = call.json;
    else if (method !== 'GET') request.json = {};
    return this.probe.send(request);
  }

  /** A one-line account of an answer: status, error code, challenge. */
  describe(exchange: Exchange): string {
    const parts = [String(exchange.status)];
    const error = errorCodeOf(exchange);
    if (error !== undefined) parts.push(`error ${error}`);
    const challenge = exchange.headers.get('www-authenticate');
    if (challenge !== null) parts.push(`WWW-Authenticate: ${challenge}`);
    return this.redactor.redact(parts.join(', '));
  }

  /** The curl lines that repeat an exchange (secrets as environment variables, tokens as $TOKEN). */
  curl(exchange: Exchange): string {
    return `reproduce: ${curlLine(exchange.request, this.redactor, this.reproduction)}`;
  }

  /** What curl lines need to fetch a token of their own: the token URL, audience and the issued tokens. */
  get reproduction() {
    return { tokenUrl: this.target.tokenUrl, audience: this.target.audience, issued: this.#issued };
  }

  readonly #issued = new Map<string, readonly string[] | undefined>();

  /** The RFC 6750 §3 error code of a 401/403: from the challenge, else from the body. */
  bearerError(exchange: Exchange): string | undefined {
    return bearerChallengeOf(exchange.headers).challenge?.params.error ?? errorCodeOf(exchange);
  }
}

export const isSuccess = (exchange: Exchange): boolean => exchange.status >= 200 && exchange.status < 300;
