export type { AccessTokenClaims } from './access-token.js';
export { type BearerChallenge, formatBearerChallenge } from './bearer-challenge.js';
export { MockError, type MockErrorCode } from './errors.js';
export type { EvidenceOptions, EvidenceStatus } from './evidence-reporter.js';
export { type FaultName, faultCatalogue, faultNames, isFaultName } from './faults.js';
export type { RsaKeyPair } from './jwks.js';
export { loansPaging } from './loans.js';
export { demoClients, type MockClient, parseClients } from './mock-client.js';
export { InjectedCrash } from './mock-server.js';
export type { RegisterStatus } from './production-register.js';
export { type MockProfile, mockProfiles, type Profile, profiles } from './profile.js';
export { type CappedText, type ReadCappedOptions, readCapped, readStreamCapped } from './read-capped.js';
export { RegisterFailure, type RegisterOptions } from './register-document.js';
export {
  type RegisterEntry,
  type RegisterEntryStatus,
  type RegisterPayload,
  registerStatuses,
  registerType,
} from './register-wire.js';
export type { LoggedRequest } from './request-log.js';
export { type MockOptions, type RunningMock, startMock } from './start-mock.js';
export type { TokenResponse } from './token-response.js';
