import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { UsageError } from '../errors.js';

/** The payload type of an in-toto Statement in a DSSE envelope. */
export const inTotoPayloadType = 'application/vnd.in-toto+json';

/** A DSSE envelope (https://github.com/secure-systems-lab/dsse, protocol v1). */
export interface DsseEnvelope {
  payloadType: string;
  /** The payload, base64 (standard alphabet, padded). */
  payload: string;
  signatures: Array<{ keyid: string; sig: string }>;
}

/** DSSE's Pre-Authentication Encoding: what is signed, so that the type is bound to the payload. */
export function preAuthEncoding(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'utf8'),
    type,
    Buffer.from(` ${payload.length} `, 'utf8'),
    payload,
  ]);
}

/** The signing algorithms of an attestation key: Ed25519, or ECDSA P-256 with SHA-256 (ES256). */
export type SigningAlgorithm = 'EdDSA' | 'ES256';

export function algorithmOf(key: KeyObject): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  throw new UsageError(
    `an attestation key must be Ed25519 or ECDSA P-256 (ES256), got ${key.asymmetricKeyType ?? 'an unknown key type'}${key.asymmetricKeyDetails?.namedCurve ? ` on ${key.asymmetricKeyDetails.namedCurve}` : ''}`,
  );
}

/** Signs `payload` into an envelope with `keyid`; ES256 signatures are r‖s (IEEE P1363), as in JWS. */
export function signEnvelope(payload: Buffer, privateKey: KeyObject, keyid: string): DsseEnvelope {
  const algorithm = algorithmOf(privateKey);
  const sig = sign(
    algorithm === 'EdDSA' ? null : 'sha256',
    preAuthEncoding(inTotoPayloadType, payload),
    algorithm === 'EdDSA' ? privateKey : { key: privateKey, dsaEncoding: 'ieee-p1363' },
  );
  return {
    payloadType: inTotoPayloadType,
    payload: payload.toString('base64'),
    signatures: [{ keyid, sig: sig.toString('base64') }],
  };
}

/** Whether `signature` is a valid signature of the envelope's payload by `publicKey`. */
export function verifySignature(envelope: DsseEnvelope, signature: string, publicKey: KeyObject): boolean {
  const algorithm = algorithmOf(publicKey);
  const payload = Buffer.from(envelope.payload, 'base64');
  try {
    return verify(
      algorithm === 'EdDSA' ? null : 'sha256',
      preAuthEncoding(envelope.payloadType, payload),
      algorithm === 'EdDSA' ? publicKey : { key: publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature, 'base64'),
    );
  } catch {
    return false;
  }
}

export { createPrivateKey, createPublicKey };
