import { type DsseEnvelope, inTotoPayloadType, verifySignature } from './dsse.js';
import type { AttestationPublicKey } from './keys.js';

/** An envelope that cannot be read further: the verification to return as it is. */
export interface Refusal {
  ok: false;
  problems: string[];
  keyid?: string;
}

/** An envelope signed by a key given, its payload read as JSON (still unchecked: only signed). */
export interface SignedPayload {
  ok?: undefined;
  /** The problems found so far (a payload type other than in-toto's); the caller adds its own. */
  problems: string[];
  keyid: string;
  payload: unknown;
}

/**
 * The checks every signed statement passes first, whatever it states: the in-toto payload type, a
 * signature by one of `keys` over the pre-authentication encoding, and a payload that is JSON. `what`
 * names the document in the message of a signature that does not verify ("attestation", "decision").
 */
export function signedBy(
  envelope: DsseEnvelope,
  keys: readonly AttestationPublicKey[],
  what: string,
): Refusal | SignedPayload {
  const problems: string[] = [];
  if (envelope.payloadType !== inTotoPayloadType)
    problems.push(
      `the payload type is ${JSON.stringify(envelope.payloadType.slice(0, 60))}, not ${inTotoPayloadType}`,
    );
  const signed = envelope.signatures.find((signature) => {
    const key = keys.find((candidate) => candidate.kid === signature.keyid);
    return key !== undefined && verifySignature(envelope, signature.sig, key.key);
  });
  if (!signed) {
    const known = envelope.signatures.some((signature) => keys.some((key) => key.kid === signature.keyid));
    problems.push(
      known
        ? `the signature does not verify: the ${what} was changed after it was signed, or signed by another key`
        : `no signature is by a key given (${envelope.signatures.map((s) => s.keyid.slice(0, 20)).join(', ')} not among ${keys.map((k) => k.kid.slice(0, 20)).join(', ') || 'no keys'})`,
    );
    return { ok: false, problems };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
  } catch {
    return { ok: false, problems: [...problems, 'the signed payload is not JSON'], keyid: signed.keyid };
  }
  return { problems, keyid: signed.keyid, payload };
}
