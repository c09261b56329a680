import type { PartnerRegisterReader, RegisterReader } from './production-register.js';
import type { TokenErrorAnswer } from './token-request.js';

/**
 * The production profile's gate: a partner gets a production token only when the register lists it
 * as `active` (never while `suspended`, `revoked` or `expired`) (and its `validUntil` has not passed by the mock's clock, even if the copy in use is
 * older than the expiry). The answer is the approved scopes, or the token endpoint's refusal.
 */

// RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E (no quote, no backslash, ASCII).
const safe = (value: string) => value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?').slice(0, 600);

function notApproved(partnerId: string, reason: string, serviceUrl: string): TokenErrorAnswer {
  return {
    status: 400,
    error: 'unauthorized_client',
    description: safe(
      `partner ${partnerId} is not approved for production: ${reason}. Certify your integration at ${serviceUrl} (a certification run, then a reviewer's approval), then ask again`,
    ),
  };
}

export async function approvedScopes(
  reader: RegisterReader | PartnerRegisterReader,
  partnerId: string,
  now: () => number,
): Promise<readonly string[] | TokenErrorAnswer> {
  const { register, lastError } = await reader.forPartner(partnerId);
  if (register === undefined)
    return {
      status: 503,
      error: 'temporarily_unavailable',
      // The register is read again at the next token request at least a second after a failed read.
      retryAfterSeconds: 1,
      description: safe(
        `the production register cannot be confirmed (${lastError ?? 'no copy yet'}) and no valid copy is held, so no production token is issued; try again later`,
      ),
    };
  const service = register.issuer;
  const entry = register.partners.get(partnerId);
  if (entry === undefined) return notApproved(partnerId, 'it was never approved', service);
  if (entry.status === 'suspended')
    return notApproved(
      partnerId,
      `its approval is suspended${entry.suspendedAt === undefined ? '' : ` since ${entry.suspendedAt}`} (decision ${entry.decisionId})`,
      service,
    );
  if (entry.status === 'revoked')
    return notApproved(partnerId, `its approval was revoked (decision ${entry.decisionId})`, service);
  const expired =
    entry.status === 'expired' || (entry.validUntil !== null && Date.parse(entry.validUntil) <= now());
  if (expired)
    return notApproved(
      partnerId,
      `its approval expired${entry.validUntil === null ? '' : ` on ${entry.validUntil}`} (decision ${entry.decisionId})`,
      service,
    );
  return entry.scopes;
}
