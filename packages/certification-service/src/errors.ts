/**
 * What went wrong, by code: one per class of the service's error family (`ServiceError` itself carries
 * the first five). Switch on `error.code`; the messages may improve, the codes do not change.
 */
export type ServiceErrorCode =
  | 'ERR_CONFIG' // a setting (a file, a variable) cannot be used
  | 'ERR_STORAGE' // the database cannot be opened or migrated
  | 'ERR_STORAGE_IN_USE' // another process holds the store (the command exits 3)
  | 'ERR_SIGNING_KEY' // the attestation key cannot be read or made
  | 'ERR_STORAGE_UNAVAILABLE' // StorageUnavailableError: the database cannot be reached now (503)
  | 'ERR_USAGE' // UsageError: an option, argument or flag is invalid
  | 'ERR_JUDGING_UNAVAILABLE' // JudgingUnavailableError: judging failed, not the run (503)
  | 'ERR_RUN_REFUSED' // RunRefusal: a run request refused (400, 409 or 429)
  | 'ERR_RUN_CLOSED' // RunClosedError: a call of a run after the run ended (404)
  | 'ERR_DECISION_REFUSED' // DecisionRefusal: the same decision again, without a reversal between
  | 'ERR_APPROVAL_IN_FORCE' // a rejection of the run a standing approval rests on (refused, not thrown out)
  | 'ERR_REGISTER_POLL_REFUSED' // ChangeRefusal: too many register polls wait (429 or 503)
  | 'ERR_EVIDENCE_REQUEST' // OtlpRequestError: an evidence request cannot be read (400 or 413)
  | 'ERR_EVIDENCE_LEASE_LOST' // EvidenceLeaseLost: a claim on a partner's evidence ran out before its commit
  | 'ERR_OIDC_DISCOVERY' // the OpenID provider's discovery document cannot be read (sign-in answers 503)
  | 'ERR_SECRETS_KEY' // a sealed secret does not open, or a derived one does not match, with this secrets key
  | 'ERR_INTERNAL'; // InternalError: an invariant of the service broke (the command exits 1, as for any bug)

/**
 * The base of the service's error family: every error class of the service extends it, with a `code`
 * and one line that says what happened and what to do. Each class sets its own `name` (a literal, not
 * the constructor's name, which a bundler may rename).
 */
export class ServiceError extends Error {
  readonly code: ServiceErrorCode;
  constructor(code: ServiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ServiceError';
    this.code = code;
  }
}

/** Seconds a client is told to wait (`Retry-After`) while the database cannot be reached. */
export const unavailableRetrySeconds = 5;

/**
 * The database cannot be reached now (connection refused, dropped or timed out; the server shutting
 * down or starting). The message, with the database's address and the driver's words, is for the
 * operator's log: an answer says only that the service is unavailable and when to retry.
 */
/**
 * `text` with its control characters as `?`: for what a message quotes from elsewhere (a driver's
 * message, a path from the configuration), since messages reach terminals and logs.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are replaced
export const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');

export class StorageUnavailableError extends ServiceError {
  constructor(where: string, cause: unknown) {
    super(
      'ERR_STORAGE_UNAVAILABLE',
      `the database at ${where} cannot be reached (${printable((cause as Error)?.message ?? String(cause))}): requests are answered 503 until it is back. Check that it is running and accepts connections.`,
      { cause },
    );
    this.name = 'StorageUnavailableError';
  }
}

/**
 * An option, argument or flag is invalid (a library call's option, an admin command's `--name`): the
 * message names it, what it takes and an example. Not a TypeError: the value was read, and refused.
 */
export class UsageError extends ServiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_USAGE', message, options);
    this.name = 'UsageError';
  }
}

/**
 * An invariant of the service broke: a bug, or its database or journal changed under it (a batch gave
 * too few results, a decision just recorded cannot be read back, the initdb of the embedded store failed).
 * The message says which; the command ends with exit 1 and the stack, as for any unexpected error.
 */
export class InternalError extends ServiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_INTERNAL', message, options);
    this.name = 'InternalError';
  }
}
