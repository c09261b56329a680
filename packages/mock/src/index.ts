export { type BearerChallenge, formatBearerChallenge } from './bearer-challenge.js';
