/** Stable codes of {@link MockError}; callers can switch on them. */
export type MockErrorCode =
  | 'ERR_MOCK_OPTIONS' // an option of startMock is invalid
  | 'ERR_MOCK_CLIENTS' // the client registry (option or --clients file) is invalid
  | 'ERR_MOCK_FAULT' // an unknown fault name
  | 'ERR_MOCK_LISTEN' // a server could not listen
  | 'ERR_MOCK_REGISTER_STATE' // the production gate's register state file cannot be read or is damaged
  | 'ERR_MOCK_EVIDENCE_SPOOL' // the production gate's evidence spool cannot be read or written
  | 'ERR_MOCK_USAGE' // a CLI flag is invalid
  | 'ERR_MOCK_REGISTER' // RegisterFailure: the production gate's register could not be read or verified
  | 'ERR_MOCK_INJECTED_CRASH'; // InjectedCrash: the api-crash-on-malformed-header fault's deliberate 500

/**
 * The one error base class of @partner-lending/mock: every error class of the package extends it, each
 * with its own `name`. `code` is stable; `cause` is kept.
 */
export class MockError extends Error {
  override readonly name: string = 'MockError';
  readonly code: MockErrorCode;

  constructor(code: MockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
