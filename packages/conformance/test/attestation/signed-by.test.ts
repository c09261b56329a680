import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { preAuthEncoding, signEnvelope } from '../../src/attestation/dsse.js';
import { type AttestationPublicKey, keysOf, publicJwk } from '../../src/attestation/keys.js';
import { signedBy } from '../../src/attestation/signed-by.js';

async function signer() {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = await publicJwk(privateKey);
  const keys: AttestationPublicKey[] = keysOf({ keys: [jwk] });
  return { privateKey, kid: jwk.kid, keys };
}

describe('signedBy: the checks every signed statement passes first', () => {
  it('opens a payload signed by a key given; a one-byte change to it is refused, naming the document', async () => {
    const { privateKey, kid, keys } = await signer();
    const envelope = signEnvelope(Buffer.from('{"a":1}'), privateKey, kid);
    expect(signedBy(envelope, keys, 'decision')).toEqual({ problems: [], keyid: kid, payload: { a: 1 } });

    const changed = { ...envelope, payload: Buffer.from('{"a":2}').toString('base64') };
    for (const what of ['attestation', 'decision'])
      expect(signedBy(changed, keys, what)).toEqual({
        ok: false,
        problems: [
          `the signature does not verify: the ${what} was changed after it was signed, or signed by another key`,
        ],
      });
  });

  it('refuses a signature by a key not given, naming both key ids', async () => {
    const { privateKey, kid } = await signer();
    const other = await signer();
    const envelope = signEnvelope(Buffer.from('{}'), privateKey, kid);
    expect(signedBy(envelope, other.keys, 'attestation')).toEqual({
      ok: false,
      problems: [`no signature is by a key given (${kid.slice(0, 20)} not among ${other.kid.slice(0, 20)})`],
    });
    expect(signedBy(envelope, [], 'attestation').problems[0]).toContain('not among no keys');
  });

  it('reports another payload type beside a good signature, and a signed payload that is not JSON', async () => {
    const { privateKey, kid, keys } = await signer();
    const notJson = signEnvelope(Buffer.from('not json'), privateKey, kid);
    expect(signedBy(notJson, keys, 'attestation')).toEqual({
      ok: false,
      problems: ['the signed payload is not JSON'],
      keyid: kid,
    });
    // Signed as another type: the signature holds (the type is bound by it), the type is a problem.
    const payload = Buffer.from('{}');
    const sig = sign(null, preAuthEncoding('text/plain', payload), privateKey).toString('base64');
    const typed = {
      payloadType: 'text/plain',
      payload: payload.toString('base64'),
      signatures: [{ keyid: kid, sig }],
    };
    expect(signedBy(typed, keys, 'attestation')).toEqual({
      problems: ['the payload type is "text/plain", not application/vnd.in-toto+json'],
      keyid: kid,
      payload: {},
    });
    // Its type changed after signing: it no longer verifies, and both are said.
    expect(signedBy({ ...typed, payloadType: 'text/plaim' }, keys, 'attestation').problems).toEqual([
      'the payload type is "text/plaim", not application/vnd.in-toto+json',
      'the signature does not verify: the attestation was changed after it was signed, or signed by another key',
    ]);
  });
});
