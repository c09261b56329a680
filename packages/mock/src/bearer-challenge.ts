/** Formats an RFC 6750 §3 `WWW-Authenticate: Bearer` challenge. */
export interface BearerChallenge {
  realm?: string;
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  errorDescription?: string;
  scope?: string;
}

// RFC 6750 §3: error_description and scope values must not contain `"` or `\`.
const quote = (value: string) => `"${value.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?')}"`;

export function formatBearerChallenge(challenge: BearerChallenge): string {
  const params: string[] = [];
  if (challenge.realm !== undefined) params.push(`realm=${quote(challenge.realm)}`);
  if (challenge.error !== undefined) params.push(`error=${quote(challenge.error)}`);
  if (challenge.errorDescription !== undefined)
    params.push(`error_description=${quote(challenge.errorDescription)}`);
  if (challenge.scope !== undefined) params.push(`scope=${quote(challenge.scope)}`);
  return params.length ? `Bearer ${params.join(', ')}` : 'Bearer';
}
