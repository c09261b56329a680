import { type ApiOperationId, expandPath, operations, scopes } from '@partner-lending/spec';
import type { JWK } from 'jose';
import { bearerChallengeOf } from './bearer-challenge.js';
import { curlLine } from './curl-line.js';
import type { Exchange, HttpProbe, ProbeRequest } from './http-probe.js';
import { errorCodeOf, jsonObject } from './http-probe.js';
import { type DecodedJwt, decodeJwt } from './jwt.js';
import type { Redactor, Secret } from './redact.js';
import { parseScopeString } from './scope-set.js';

/** The service under test. */
export interface Target {
  readonly authUrl: string;
  readonly tokenUrl: string;
  readonly baseUrl: string;
  readonly audience: string;
  readonly clientId: Secret;
  readonly clientSecret: Secret;
}

/** The settings checks read. */
export interface CheckSettings {
  readonly allowWrites: boolean;
  readonly expectScopes: readonly string[] | undefined;
  readonly maxExpiryWaitSeconds: number;
  /** A partner id that is not the tested client's, for the isolation check. */
  readonly foreignPartnerId: string | undefined;
  /** Where the key set is, when known (the embedded mock); else discovered. */
  readonly jwksUrl: string | undefined;
}

/** A token request and what came back. */
export interface TokenOutcome {
  readonly exchange: Exchange;
  /** The scopes asked for; undefined when no scope parameter was sent. */
  readonly requested: readonly string[] | undefined;
  readonly audience: string;
  /** The access token when the answer was a 200 carrying one. */
  readonly accessToken: string | undefined;
  readonly body: Record<string, unknown> | undefined;
  readonly jwt: DecodedJwt | undefined;
  /** The granted scopes: the response `scope`, or the requested ones when it is absent (RFC 6749 §5.1). */
  readonly granted: string[] | undefined;
}

export interface ApiCall {
  /** The whole Authorization header; null sends none. Default: `Bearer <token>`. */
  authorization?: string | null;
  token?: string;
  partnerId?: string;
  query?: Record<string, string>;
  json?: unknown;
  form?: ReadonlyArray<readonly [string, string]>;
  headers?: Record<string, string>;
}

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

  /** The preflight token: every scope requested. */
  get main(): TokenOutcome {
    if (!this.#main?.accessToken) throw new Error('the preflight found no token; no check can run');
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
    if (typeof id !== 'string') throw new Error('the token response holds no partnerId (seed §2.2)');
    return id;
  }

  /** The form of a client-credentials token request (seed §2.1), credentials in the body. */
  tokenForm(options: { scopes?: readonly string[] | undefined; audience?: string } = {}): [string, string][] {
    const form: [string, string][] = [
      ['grant_type', 'client_credentials'],
      ['client_id', this.target.clientId.reveal()],
      ['client_secret', this.target.clientSecret.reveal()],
      ['audience', options.audience ?? this.target.audience],
    ];
    if (options.scopes !== undefined) form.push(['scope', options.scopes.join(' ')]);
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
    if (accessToken) this.redactor.addToken(accessToken);
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

  /** A token for exactly this request, shared between checks (one request per distinct ask). */
  tokenFor(requested: readonly string[] | undefined, audience = this.target.audience): Promise<TokenOutcome> {
    const key = this.#key(requested, audience);
    let outcome = this.#tokens.get(key);
    if (!outcome) {
      outcome = this.requestToken({ scopes: requested, audience });
      this.#tokens.set(key, outcome);
    }
    return outcome;
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

  /** The curl line that repeats an exchange (secrets as environment variables, tokens shortened). */
  curl(exchange: Exchange): string {
    return `reproduce: ${curlLine(exchange.request, this.redactor)}`;
  }

  /** The RFC 6750 §3 error code of a 401/403: from the challenge, else from the body. */
  bearerError(exchange: Exchange): string | undefined {
    return bearerChallengeOf(exchange.headers).challenge?.params.error ?? errorCodeOf(exchange);
  }
}

export const isSuccess = (exchange: Exchange): boolean => exchange.status >= 200 && exchange.status < 300;
