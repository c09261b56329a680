export { missingScopes, normalizeScopes, parseScopeString, type ScopeSet } from './scope-set.js';
