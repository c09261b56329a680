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

/** Where a journey reaches its stage: the token endpoint's and the partner API's addresses. */
export interface StageAddresses {
  authUrl: string;
  baseUrl: string;
  tokenUrl: string;
  audience: string;
}

/**
 * The variables a journey reads (the stage's addresses and its client's credentials, secret included),
 * whether its stage runs here or at the certification service.
 */
export function journeyEnv(
  addresses: StageAddresses,
  client: Pick<StageClient, 'clientId' | 'clientSecret' | 'authorizedScopes'>,
): Record<string, string> {
  return {
    PARTNER_AUTH_URL: addresses.authUrl,
    PARTNER_BASE_URL: addresses.baseUrl,
    PARTNER_TOKEN_URL: addresses.tokenUrl,
    PARTNER_AUDIENCE: addresses.audience,
    PARTNER_CLIENT_ID: client.clientId,
    PARTNER_CLIENT_SECRET: client.clientSecret,
    PARTNER_SCOPES: client.authorizedScopes.join(' '),
  };
}
