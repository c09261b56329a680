// The parsed challenge, in a file of its own: errors.ts carries one and bearer-challenge.ts (which throws
// errors.ts's ConfigurationError) parses it, so both import it here and neither imports the other's type.
/**
 * `WWW-Authenticate` challenges (RFC 9110 §11.6.1):
 *
 *   challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
 *   auth-param = token BWS "=" BWS ( token / quoted-string )
 *
 * One header may hold several challenges separated by commas, and the commas also separate the
 * auth-params of one challenge: an item `name=value` continues the current challenge, an item that
 * starts with a bare token begins the next one.
 */
export interface Challenge {
  /** The auth-scheme as sent (compare case-insensitively). */
  scheme: string;
  /** auth-params, names lowercased (they are case-insensitive), quoted-string values unescaped. */
  params: Record<string, string>;
  token68?: string;
}
