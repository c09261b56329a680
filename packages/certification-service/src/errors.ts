/** What went wrong, by code: configuration, storage, keys, or a request. */
export type ServiceErrorCode =
  | 'ERR_CONFIG'
  | 'ERR_STORAGE'
  | 'ERR_STORAGE_IN_USE'
  | 'ERR_SIGNING_KEY'
  | 'ERR_USAGE';

/** An error of the service with a code and one line that says what happened and what to do. */
export class ServiceError extends Error {
  readonly code: ServiceErrorCode;
  constructor(code: ServiceErrorCode, message: string) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
  }
}
