import { createRemoteJWKSet, errors as joseErrors, jwtVerify } from 'jose';
import { MockError } from './errors.js';

/**
 * The production register: the certification service's signed list of every partner's production
 * status. The production profile issues tokens only to partners it lists as `active`, with the
 * scopes it approves. Read with a register reader key, verified with the service's JWKS, cached as
 * its `Cache-Control: max-age` and `ETag` say, and served from the last valid copy while the service
 * cannot be reached, until that copy's `exp` (then nothing is issued: fail closed).
 */

/** Where and how to read the register (`startMock({ register })`, `partner-mock --register …`). */
export interface RegisterOptions {
  /** The register's address, e.g. `https://certify.example/register`. */
  url: string;
  /** The register reader key, sent as `Authorization: Bearer <key>`. */
  key: string;
  /** The service's JWKS. Default: `<origin of url>/.well-known/jwks.json`. */
  jwksUrl?: string;
  /** Time limit of one fetch of the register or the JWKS, in ms. Default 5000. */
  timeoutMs?: number;
  /**
   * `register` (default): read the whole register, one document for every partner. `partner`: at a
   * partner's token request, read only its entry, `GET <url>/partners/<partnerId>`, each entry cached
   * on its own (its `max-age`, `ETag`, `exp`; a 404 is "never approved", cached for the 404's `max-age`).
   */
  lookup?: 'register' | 'partner';
}

/** One partner's production status, as the register lists it. */
export interface RegisterEntry {
  readonly partnerId: string;
  readonly name: string;
  readonly status: 'active' | 'revoked' | 'expired';
  readonly scopes: readonly string[];
  readonly validUntil: string | null;
  readonly decisionId: string;
}

/** A verified register. */
export interface Register {
  /** The service that signed it (its public URL): where partners certify. */
  readonly issuer: string;
  /** Epoch seconds. */
  readonly issuedAt: number;
  /** Epoch seconds: past it the copy is not used any more. */
  readonly expiresAt: number;
  readonly partners: ReadonlyMap<string, RegisterEntry>;
}

/** What `RunningMock.registerStatus()` reports. */
export interface RegisterStatus {
  /** The register's address (`lookup: 'partner'`: `<register>/partners/{partnerId}`). */
  readonly url: string;
  readonly jwksUrl: string;
  /** `partner` when entries are read one partner at a time; absent for the whole register. */
  readonly lookup?: 'partner';
  /**
   * `fresh`: a verified copy within its max-age; `stale`: the last verified copy, kept while the
   * service cannot be read, until its `exp`; `none`: no usable copy (nothing is issued).
   */
  readonly state: 'fresh' | 'stale' | 'none';
  /** ISO time of the copy in use, its expiry, and when it was last confirmed (200 or 304). */
  readonly issuedAt?: string;
  readonly expiresAt?: string;
  readonly confirmedAt?: string;
  /** Partners in the copy in use. */
  readonly partners?: number;
  /** How many verified copies were taken in (200 answers), and 304 answers. */
  readonly fetches: number;
  readonly notModified: number;
  /** The last failure to read or verify the register, if the last attempt failed. */
  readonly lastError?: string;
}

const statuses = new Set(['active', 'revoked', 'expired']);
/** Largest register read: 4 MiB. */
const registerLimitBytes = 4 * 1024 * 1024;
/** Most partners taken from one register. */
const partnerLimit = 100_000;
/** After a failed read, the next attempt waits this long (token requests meanwhile use the last copy). */
const retryAfterFailureMs = 1000;
/** The attestation key's algorithms: Ed25519 (EdDSA) or ECDSA P-256. */
const algorithms = ['EdDSA', 'Ed25519', 'ES256'];
export const registerType = 'partner-register+jwt';

class RegisterFailure extends Error {}

const fail = (message: string): never => {
  throw new MockError('ERR_MOCK_OPTIONS', message);
};

function httpUrl(name: string, value: unknown): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.username !== '' || url.password !== '')
    return fail(
      `startMock: register.${name} must be an http(s) URL without credentials, such as https://certify.example/register.`,
    );
  return url;
}

/** Checks `register` options; the defaults filled in. */
export function resolveRegisterOptions(options: RegisterOptions): Required<RegisterOptions> {
  if (typeof options !== 'object' || options === null)
    fail('startMock: register must be { url, key, jwksUrl? } (the certification service register).');
  const url = httpUrl('url', options.url);
  if (typeof options.key !== 'string' || options.key.trim() === '' || /[\s\0]/.test(options.key.trim()))
    fail(
      'startMock: register.key must be the register reader key (one word, from `partner-certification-service admin add-register-reader`).',
    );
  const jwksUrl =
    options.jwksUrl === undefined
      ? new URL('/.well-known/jwks.json', url.origin)
      : httpUrl('jwksUrl', options.jwksUrl);
  const timeoutMs = options.timeoutMs ?? 5000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000)
    fail(`startMock: register.timeoutMs must be an integer from 1 to 600000, got ${String(timeoutMs)}.`);
  const lookup = options.lookup ?? 'register';
  if (lookup !== 'register' && lookup !== 'partner')
    fail(
      `startMock: register.lookup must be 'register' or 'partner', got ${JSON.stringify(String(lookup).slice(0, 40))}.`,
    );
  return { url: url.href, key: options.key.trim(), jwksUrl: jwksUrl.href, timeoutMs, lookup };
}

/** `max-age` of a Cache-Control header in seconds; 0 when absent, or for no-cache / no-store. */
export function maxAgeOf(header: string | null): number {
  if (header === null) return 0;
  const directives = header
    .toLowerCase()
    .split(',')
    .map((part) => part.trim());
  if (directives.some((d) => d === 'no-cache' || d === 'no-store')) return 0;
  for (const directive of directives) {
    const match = /^max-age\s*=\s*"?(\d{1,9})"?$/.exec(directive);
    if (match) return Number(match[1]);
  }
  return 0;
}

function text(value: unknown, what: string, max = 1000): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max)
    throw new RegisterFailure(
      `the register's ${what} is not a non-empty string of at most ${max} characters`,
    );
  return value;
}

/** Validates the payload of a verified register. */
export function parseRegisterPayload(payload: Record<string, unknown>): Register {
  const { iss, iat, exp, partners } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number')
    throw new RegisterFailure('the register has no numeric iat and exp');
  const issuer = text(iss, 'iss');
  if (!Array.isArray(partners)) throw new RegisterFailure('the register has no partners array');
  if (partners.length > partnerLimit)
    throw new RegisterFailure(`the register lists more than ${partnerLimit} partners`);
  const map = new Map<string, RegisterEntry>();
  partners.forEach((item: unknown, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw new RegisterFailure(`partners[${index}] of the register is not an object`);
    const entry = item as Record<string, unknown>;
    const status = entry.status;
    if (typeof status !== 'string' || !statuses.has(status))
      throw new RegisterFailure(
        `partners[${index}].status of the register is not active, revoked or expired`,
      );
    if (
      !Array.isArray(entry.scopes) ||
      entry.scopes.length > 100 ||
      !entry.scopes.every((scope) => typeof scope === 'string' && scope.length <= 200)
    )
      throw new RegisterFailure(`partners[${index}].scopes of the register is not an array of scopes`);
    const validUntil = entry.validUntil ?? null;
    if (validUntil !== null && (typeof validUntil !== 'string' || Number.isNaN(Date.parse(validUntil))))
      throw new RegisterFailure(`partners[${index}].validUntil of the register is not a date or null`);
    const partnerId = text(entry.partnerId, `partners[${index}].partnerId`, 200);
    map.set(partnerId, {
      partnerId,
      name: typeof entry.name === 'string' ? entry.name.slice(0, 200) : '',
      status: status as RegisterEntry['status'],
      scopes: [...(entry.scopes as string[])],
      validUntil: validUntil as string | null,
      decisionId: typeof entry.decisionId === 'string' ? entry.decisionId.slice(0, 200) : '',
    });
  });
  return { issuer, issuedAt: iat, expiresAt: exp, partners: map };
}

/** Reads a response body up to `limit` bytes; undefined when it is larger. */
async function readCapped(response: Response, limit: number): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeFailure(error: unknown): string {
  if (error instanceof RegisterFailure) return error.message;
  if (error instanceof joseErrors.JWTExpired) return 'the register has expired (its exp has passed)';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return "the register's signature does not verify with the service's JWKS";
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return "no key of the service's JWKS matches the register's kid";
  if (error instanceof joseErrors.JWTClaimValidationFailed)
    return `the register was refused: ${error.message}`;
  if (error instanceof joseErrors.JOSEError)
    return `the register was refused (${error.code}): ${error.message}`;
  if (error instanceof Error && error.name === 'TimeoutError') return 'the service did not answer in time';
  const cause = (error as { cause?: { code?: string } })?.cause?.code;
  return `the service could not be reached${cause ? ` (${cause})` : ''}`;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/**
 * Keeps the last verified register. `current()` gives the copy to decide with: refreshed first when
 * its max-age has passed (one read at a time, shared by concurrent callers), the last copy when the
 * read fails, nothing once that copy's `exp` has passed.
 */
export class RegisterReader {
  readonly #options: Required<RegisterOptions>;
  readonly #clock: () => number;
  readonly #jwks: ReturnType<typeof createRemoteJWKSet>;
  #copy: Register | undefined;
  #etag: string | undefined;
  #freshUntil = 0;
  #confirmedAt = 0;
  #lastFailureAt = Number.NEGATIVE_INFINITY;
  #lastError: string | undefined;
  #fetches = 0;
  #notModified = 0;
  #reading: Promise<void> | undefined;

  /** Set for one partner's entry (`lookup: 'partner'`): a 404 then means "not in the register". */
  readonly #absentOn404: boolean;

  constructor(
    options: RegisterOptions,
    clock: () => number,
    shared?: { jwks: ReturnType<typeof createRemoteJWKSet>; absentOn404: boolean },
  ) {
    this.#options = resolveRegisterOptions(options);
    this.#clock = clock;
    this.#jwks =
      shared?.jwks ??
      createRemoteJWKSet(new URL(this.#options.jwksUrl), {
        timeoutDuration: this.#options.timeoutMs,
        cooldownDuration: 5000,
      });
    this.#absentOn404 = shared?.absentOn404 ?? false;
  }

  /** The copy to decide on `partnerId` with (the whole register), and why the last read failed. */
  async forPartner(_partnerId: string): Promise<{ register: Register | undefined; lastError?: string }> {
    const register = await this.current();
    return { register, ...(this.lastError === undefined ? {} : { lastError: this.lastError }) };
  }

  /** The service's address as the last register names it (its `iss`), else the register's origin. */
  get serviceUrl(): string {
    return this.#copy?.issuer ?? new URL(this.#options.url).origin;
  }

  /** Why the last read failed, if it did. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** The copy to decide with, read again first when its max-age has passed. */
  async current(): Promise<Register | undefined> {
    const now = this.#clock();
    if (this.#copy === undefined || now >= this.#freshUntil) {
      if (now - this.#lastFailureAt >= retryAfterFailureMs || this.#reading) await this.refresh();
    }
    return this.#usable(this.#clock());
  }

  #usable(now: number): Register | undefined {
    return this.#copy !== undefined && now < this.#copy.expiresAt * 1000 ? this.#copy : undefined;
  }

  /** Reads the register now (one read at a time). Never throws: a failure is kept in `lastError`. */
  refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    try {
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.#options.key}`,
        accept: 'application/jwt',
      };
      if (this.#etag !== undefined && this.#copy !== undefined) headers['if-none-match'] = this.#etag;
      const response = await fetch(this.#options.url, {
        headers,
        // The reader key goes to the register's address only.
        redirect: 'error',
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
      const now = this.#clock();
      if (response.status === 304 && this.#copy !== undefined) {
        await response.body?.cancel();
        this.#notModified += 1;
        this.#confirmed(response, now);
        return;
      }
      if (response.status === 404 && this.#absentOn404) {
        // The partner is not in the register: an empty copy, valid for the answer's max-age (at least
        // a second, so that a flood of one unknown partner's requests costs one read a second). It
        // never raises the replay floor: issuedAt stays that of the last signed copy.
        await response.body?.cancel();
        const seconds = Math.max(1, maxAgeOf(response.headers.get('cache-control')));
        this.#copy = {
          issuer: this.#copy?.issuer ?? new URL(this.#options.url).origin,
          issuedAt: this.#copy?.issuedAt ?? 0,
          expiresAt: Math.floor(now / 1000) + seconds,
          partners: new Map(),
        };
        this.#etag = undefined;
        this.#fetches += 1;
        this.#confirmedAt = now;
        this.#freshUntil = now + seconds * 1000;
        this.#lastError = undefined;
        return;
      }
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new RegisterFailure(
          `the service answered ${response.status} to GET ${this.#options.url}${response.status === 401 || response.status === 403 ? ' (is the register reader key right?)' : ''}`,
        );
      }
      const body = await readCapped(response, registerLimitBytes);
      if (body === undefined) throw new RegisterFailure('the register is larger than 4 MiB');
      const { payload, protectedHeader } = await jwtVerify(body.trim(), this.#jwks, {
        typ: registerType,
        algorithms,
        requiredClaims: ['iss', 'iat', 'exp'],
        currentDate: new Date(now),
      });
      if (typeof protectedHeader.kid !== 'string')
        throw new RegisterFailure('the register has no kid in its protected header');
      const register = parseRegisterPayload(payload as Record<string, unknown>);
      // An older register than the one held (a replayed copy) never replaces it.
      if (this.#copy !== undefined && register.issuedAt < this.#copy.issuedAt)
        throw new RegisterFailure('the register is older than the copy already held (replayed?)');
      this.#copy = register;
      this.#fetches += 1;
      this.#etag = response.headers.get('etag') ?? undefined;
      this.#confirmed(response, now);
    } catch (error) {
      this.#lastFailureAt = this.#clock();
      this.#lastError = describeFailure(error);
    }
  }

  #confirmed(response: Response, now: number): void {
    this.#confirmedAt = now;
    this.#freshUntil = now + maxAgeOf(response.headers.get('cache-control')) * 1000;
    this.#lastError = undefined;
  }

  status(): RegisterStatus {
    const now = this.#clock();
    const copy = this.#usable(now);
    const base = {
      url: this.#options.url,
      jwksUrl: this.#options.jwksUrl,
      fetches: this.#fetches,
      notModified: this.#notModified,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
    if (copy === undefined) return { ...base, state: 'none' };
    return {
      ...base,
      state: now < this.#freshUntil && this.#lastError === undefined ? 'fresh' : 'stale',
      issuedAt: iso(copy.issuedAt),
      expiresAt: iso(copy.expiresAt),
      confirmedAt: new Date(this.#confirmedAt).toISOString(),
      partners: copy.partners.size,
    };
  }
}

/** Most partners whose entries are kept at once (`lookup: 'partner'`); the oldest read goes first. */
const partnerEntriesLimit = 10_000;

/**
 * `lookup: 'partner'`: one RegisterReader per partner asking for a token, each reading
 * `GET <register>/partners/<partnerId>` with the same rules as the whole register (verified with the
 * service's JWKS, kept for its max-age, revalidated with its ETag, the last copy used until its exp
 * while the service cannot be read, nothing after). One JWKS cache is shared.
 */
export class PartnerRegisterReader {
  readonly #options: Required<RegisterOptions>;
  readonly #clock: () => number;
  readonly #jwks: ReturnType<typeof createRemoteJWKSet>;
  readonly #readers = new Map<string, RegisterReader>();

  constructor(options: RegisterOptions, clock: () => number) {
    this.#options = resolveRegisterOptions(options);
    this.#clock = clock;
    this.#jwks = createRemoteJWKSet(new URL(this.#options.jwksUrl), {
      timeoutDuration: this.#options.timeoutMs,
      cooldownDuration: 5000,
    });
  }

  /** Where a partner's entry is read. */
  entryUrl(partnerId: string): string {
    return `${this.#options.url.replace(/\/+$/, '')}/partners/${encodeURIComponent(partnerId)}`;
  }

  async forPartner(partnerId: string): Promise<{ register: Register | undefined; lastError?: string }> {
    let reader = this.#readers.get(partnerId);
    if (reader === undefined) {
      if (this.#readers.size >= partnerEntriesLimit) {
        const oldest = this.#readers.keys().next().value;
        if (oldest !== undefined) this.#readers.delete(oldest);
      }
      reader = new RegisterReader({ ...this.#options, url: this.entryUrl(partnerId) }, this.#clock, {
        jwks: this.#jwks,
        absentOn404: true,
      });
      this.#readers.set(partnerId, reader);
    }
    return reader.forPartner(partnerId);
  }

  /** Nothing is read before a token request asks for a partner. */
  refresh(): Promise<void> {
    return Promise.resolve();
  }

  status(): RegisterStatus {
    const statuses = [...this.#readers.values()].map((reader) => reader.status());
    const failed = statuses.find((status) => status.lastError !== undefined);
    const usable = statuses.filter((status) => status.state !== 'none');
    return {
      url: this.entryUrl('{partnerId}').replace('%7BpartnerId%7D', '{partnerId}'),
      jwksUrl: this.#options.jwksUrl,
      lookup: 'partner',
      state: usable.length === 0 ? 'none' : usable.every((s) => s.state === 'fresh') ? 'fresh' : 'stale',
      partners: usable.length,
      fetches: statuses.reduce((sum, s) => sum + s.fetches, 0),
      notModified: statuses.reduce((sum, s) => sum + s.notModified, 0),
      ...(failed?.lastError === undefined ? {} : { lastError: failed.lastError }),
    };
  }
}

/** The reader `lookup` asks for. */
export function registerReader(
  options: RegisterOptions,
  clock: () => number,
): RegisterReader | PartnerRegisterReader {
  return options.lookup === 'partner'
    ? new PartnerRegisterReader(options, clock)
    : new RegisterReader(options, clock);
}
