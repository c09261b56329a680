/** Stable codes of {@link ConformanceError}; callers (and the CLI's exit code) switch on them. */
export type ConformanceErrorCode =
  | 'ERR_USAGE' // a flag, option or environment variable is invalid (exit 2)
  | 'ERR_CREDENTIALS' // the token endpoint refused the client credentials (exit 2)
  | 'ERR_PREFLIGHT' // the target answered, but not like an OAuth token endpoint (exit 2)
  | 'ERR_UNREACHABLE' // the token endpoint or the API could not be reached at all (exit 3)
  | 'ERR_NETWORK' // one request failed below HTTP (inside a check: the check errors)
  | 'ERR_REPORT' // a report file could not be written (exit 2)
  | 'ERR_SERVICE' // the certification service refused a request of a hosted run (exit 2)
  | 'ERR_WRITE_GUARD' // a check tried to send a body to a create endpoint without --allow-writes (a bug: the check errors)
  | 'ERR_TOKEN_NOT_JWS'; // a check needs the target's access token as a compact JWS, and it is not one (the check errors)

/**
 * The one error base class of @partner-lending/conformance: every error class of the package extends it,
 * each with its own `name`. `code` is stable; `cause` is kept.
 */
export class ConformanceError extends Error {
  override readonly name: string = 'ConformanceError';
  readonly code: ConformanceErrorCode;

  constructor(code: ConformanceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The exit code of the CLI contract for an error: 3 when the target is unreachable, else 2. */
export function exitCodeForError(error: ConformanceError): 2 | 3 {
  return error.code === 'ERR_UNREACHABLE' ? 3 : 2;
}

/**
 * A usage or configuration error (ERR_USAGE, exit 2): a flag, option, environment variable or input file
 * (a plan, a session, an attestation, a key) is wrong; the message says what was expected.
 */
export class UsageError extends ConformanceError {
  override readonly name: string = 'UsageError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_USAGE', message, options);
  }
}

/** A UsageError: the one way every part says "this input is wrong". */
export const usageError = (message: string): UsageError => new UsageError(message);
