import type { StageSigningKey } from '@partner-lending/conformance';
import { InternalError, ServiceError } from '../errors.js';
import { derivedSecret, hashSecret, sameText, seal, unseal } from '../secrets.js';

/** A run's stage key as its row keeps it: the public half, and the private half sealed. */
export interface SealedStageKey {
  publicKeyPem: string;
  sealedPrivateKey: string;
}

/**
 * A run's client secret: derived from the secrets key and the run's id, so that any instance with the
 * key serves the run while the database keeps only its SHA-256 (a verifier).
 */
export function runClientSecret(secretsKey: Buffer, runId: string): { secret: string; sha256: string } {
  const secret = derivedSecret(secretsKey, 'run client secret', runId);
  return { secret, sha256: hashSecret(secret) };
}

export function sealStageKey(secretsKey: Buffer, runId: string, key: StageSigningKey): SealedStageKey {
  return {
    publicKeyPem: key.publicKeyPem,
    sealedPrivateKey: seal(secretsKey, key.privateKeyPem, `run stage key\u0000${runId}`),
  };
}

/**
 * What a stage needs of its run's secrets, from the run's row. A row written before secrets were kept
 * sealed (a run open across the upgrade) still holds them in the clear, until the run ends.
 */
export function openRunSecrets(
  secretsKey: Buffer,
  run: {
    id: string;
    client_secret: string | null;
    client_secret_sha256?: string | null;
    signing_key: StageSigningKey | SealedStageKey | null;
  },
): { clientSecret: string; signingKey: StageSigningKey } {
  const stored = run.signing_key;
  if (!stored) throw new InternalError(`run ${run.id} has no stage key (it has ended)`);
  const signingKey =
    'privateKeyPem' in stored
      ? stored
      : {
          publicKeyPem: stored.publicKeyPem,
          privateKeyPem: unsealed(
            () => unseal(secretsKey, stored.sealedPrivateKey, `run stage key\u0000${run.id}`),
            run.id,
          ),
        };
  if (run.client_secret) return { clientSecret: run.client_secret, signingKey };
  const { secret, sha256 } = runClientSecret(secretsKey, run.id);
  if (!run.client_secret_sha256 || !sameText(sha256, run.client_secret_sha256))
    throw new ServiceError(
      'ERR_SECRETS_KEY',
      `run ${run.id}: its client secret does not match the one this instance derives: every instance needs the same SECRETS_KEY_FILE (or, without one, the same SIGNING_KEY_FILE) as the one that created the run`,
    );
  return { clientSecret: secret, signingKey };
}

function unsealed(open: () => string, runId: string): string {
  try {
    return open();
  } catch {
    throw new ServiceError(
      'ERR_SECRETS_KEY',
      `run ${runId}: its stage key does not open with this instance's secrets key: every instance needs the same SECRETS_KEY_FILE (or, without one, the same SIGNING_KEY_FILE) as the one that created the run`,
    );
  }
}
