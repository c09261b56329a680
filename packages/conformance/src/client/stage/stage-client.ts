import { randomBytes } from 'node:crypto';

/** The credentials and addresses handed to the journey. */
export interface StageClient {
  clientId: string;
  clientSecret: string;
  partnerId: string;
  authorizedScopes: string[];
}

/** A fresh client for one stage or run: its own id, secret and partner id, granted `authorizedScopes`. */
export function newStageClient(authorizedScopes: readonly string[]): StageClient {
  return {
    clientId: `cert-${randomBytes(8).toString('hex')}`,
    clientSecret: randomBytes(24).toString('base64url'),
    partnerId: `partner-cert-${randomBytes(3).toString('hex')}`,
    authorizedScopes: [...authorizedScopes],
  };
}
