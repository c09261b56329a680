import { type JWTVerifyGetKey, errors as joseErrors, jwtVerify } from 'jose';
import { MockError } from './errors.js';
import { type RegisterEntry, registerStatuses, registerType } from './register-wire.js';

/**
 * The register as a document: the options saying where to read it, and the checks of one signed
 * copy (signature, typ, claims, seq, iat not ahead of the clock, partners).
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
  /**
   * A file keeping the gate's replay floor (the highest register `seq` accepted, per document) across
   * restarts: read at start (a damaged one stops the start), written atomically at each newer copy.
   * Default: none, the floor lives in memory only and a restarted gate takes any valid copy once.
   */
  stateFile?: string;
  /** How far in the future a register's `iat` may be, in seconds (clock skew). Default 60. */
  clockSkewSeconds?: number;
  /**
   * Hold the service's change notice (`GET <url>/changes`, a long poll) in the background and read the
   * register again as soon as it says the register changed, so that a revocation reaches the gate in
   * about a second rather than at the end of the copy's max-age. A failing notice (or a service without
   * one) leaves the max-age pull as it is. Default true; false reads only at max-age.
   */
  changes?: boolean;
}

/** A verified register. */
export interface Register {
  /** The service that signed it (its public URL): where partners certify. */
  readonly issuer: string;
  /** Epoch seconds. */
  readonly issuedAt: number;
  /** Its sequence number: each register the service signs has a higher one. */
  readonly seq: number;
  /** Epoch seconds: past it the copy is not used any more. */
  readonly expiresAt: number;
  readonly partners: ReadonlyMap<string, RegisterEntry>;
}

const statuses: ReadonlySet<string> = new Set(registerStatuses);
/** Largest register read: 4 MiB. */
export const registerLimitBytes = 4 * 1024 * 1024;
/** Most partners taken from one register. */
const partnerLimit = 100_000;
/** After a failed read, the next attempt waits this long (token requests meanwhile use the last copy). */
export const retryAfterFailureMs = 1000;
/** The attestation key's algorithms: Ed25519 (EdDSA) or ECDSA P-256. */
const algorithms = ['EdDSA', 'Ed25519', 'ES256'];

/** Why a read of the register failed (the service's answer, the document, its signature, the replay floor). */
export class RegisterFailure extends MockError {
  override readonly name: string = 'RegisterFailure';

  constructor(message: string) {
    super('ERR_MOCK_REGISTER', message);
  }
}

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
export function resolveRegisterOptions(
  options: RegisterOptions,
): Required<Omit<RegisterOptions, 'stateFile'>> & Pick<RegisterOptions, 'stateFile'> {
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
  const { stateFile, clockSkewSeconds = 60, changes = true } = options;
  if (typeof changes !== 'boolean') fail('startMock: register.changes must be true or false.');
  if (stateFile !== undefined && (typeof stateFile !== 'string' || stateFile.trim() === ''))
    fail('startMock: register.stateFile must be the path of the register state file.');
  if (!Number.isInteger(clockSkewSeconds) || clockSkewSeconds < 0 || clockSkewSeconds > 3600)
    fail(
      `startMock: register.clockSkewSeconds must be an integer from 0 to 3600, got ${String(clockSkewSeconds)}.`,
    );
  return {
    url: url.href,
    key: options.key.trim(),
    jwksUrl: jwksUrl.href,
    timeoutMs,
    lookup,
    clockSkewSeconds,
    changes,
    ...(stateFile === undefined ? {} : { stateFile }),
  };
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
  const { iss, iat, exp, seq, partners } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number')
    throw new RegisterFailure('the register has no numeric iat and exp');
  if (seq === undefined)
    throw new RegisterFailure(
      'the register has no seq (its sequence number, higher in each register the service signs, which lets this gate refuse a replayed copy); update the certification service',
    );
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0)
    throw new RegisterFailure("the register's seq is not a non-negative integer");
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
        `partners[${index}].status of the register is not active, suspended, revoked or expired`,
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
    const suspendedAt = entry.suspendedAt ?? null;
    if (suspendedAt !== null && (typeof suspendedAt !== 'string' || Number.isNaN(Date.parse(suspendedAt))))
      throw new RegisterFailure(`partners[${index}].suspendedAt of the register is not a date or null`);
    const partnerId = text(entry.partnerId, `partners[${index}].partnerId`, 200);
    map.set(partnerId, {
      partnerId,
      name: typeof entry.name === 'string' ? entry.name.slice(0, 200) : '',
      status: status as RegisterEntry['status'],
      scopes: [...(entry.scopes as string[])],
      validUntil: validUntil as string | null,
      decisionId: typeof entry.decisionId === 'string' ? entry.decisionId.slice(0, 200) : '',
      ...(status === 'suspended' && suspendedAt !== null && { suspendedAt: suspendedAt as string }),
    });
  });
  return { issuer, issuedAt: iat, expiresAt: exp, seq, partners: map };
}

export function describeFailure(error: unknown): string {
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

/**
 * Verifies one copy read from the service: signature (the service's JWKS), typ, iss/iat/exp, a kid,
 * an iat no further ahead of `now` than `clockSkewSeconds`, then the payload (seq, partners).
 */
export async function verifyRegister(
  jws: string,
  jwks: JWTVerifyGetKey,
  now: number,
  clockSkewSeconds: number,
): Promise<Register> {
  const { payload, protectedHeader } = await jwtVerify(jws, jwks, {
    typ: registerType,
    algorithms,
    requiredClaims: ['iss', 'iat', 'exp'],
    currentDate: new Date(now),
  });
  if (typeof protectedHeader.kid !== 'string')
    throw new RegisterFailure('the register has no kid in its protected header');
  const register = parseRegisterPayload(payload as Record<string, unknown>);
  const ahead = register.issuedAt - Math.floor(now / 1000);
  if (ahead > clockSkewSeconds)
    throw new RegisterFailure(
      `the register's iat is ${ahead} s ahead of this gate's clock, more than the ${clockSkewSeconds} s of clock skew allowed (register.clockSkewSeconds, --register-clock-skew); check both clocks`,
    );
  return register;
}
