/** What went wrong, by code: configuration, storage, keys, or a request. */
export type ServiceErrorCode =
  | 'ERR_CONFIG'
  | 'ERR_STORAGE'
  | 'ERR_STORAGE_IN_USE'
  | 'ERR_STORAGE_UNAVAILABLE'
  | 'ERR_SIGNING_KEY'
  | 'ERR_USAGE';

/** An error of the service with a code and one line that says what happened and what to do. */
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
export class StorageUnavailableError extends ServiceError {
  constructor(where: string, cause: unknown) {
    super(
      'ERR_STORAGE_UNAVAILABLE',
      `the database at ${where} cannot be reached (${(cause as Error)?.message ?? String(cause)}): requests are answered 503 until it is back. Check that it is running and accepts connections.`,
      { cause },
    );
    this.name = 'StorageUnavailableError';
  }
}
