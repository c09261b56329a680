export { addPartner, addReviewer } from './admin.js';
export { type Database, openDatabase, openEmbedded, openPostgres, type Queryable } from './db/database.js';
export { migrate, migrations } from './db/migrations.js';
export { ServiceError, type ServiceErrorCode, StorageUnavailableError } from './errors.js';
export { defaultFairnessLimits, type FairnessLimits } from './http/fairness.js';
export { jwksOf, loadSigningKey, publishKey, type SigningKey } from './keys.js';
export { defaultRunLimits, type RunLimits, type RunRequest } from './runs/runs.js';
export { type RunningService, type ServiceOptions, startService } from './server.js';
export { defaultSigninLimits, type SigninLimits } from './ui/signin-guard.js';
