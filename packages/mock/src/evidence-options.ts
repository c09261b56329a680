import { MockError } from './errors.js';

/**
 * The evidence reporter's options (evidence-reporter.ts): what `startMock({ evidence })` and
 * `partner-mock --evidence …` accept, their checks and defaults, and what `evidenceStatus()` reports.
 */

/** Where and how to report evidence (`startMock({ evidence })`, `partner-mock --evidence …`). */
export interface EvidenceOptions {
  /** The certification service's evidence endpoint, e.g. `https://certify.example/evidence`. */
  url: string;
  /** The evidence reporter key (`admin add-evidence-reporter`), sent as `Authorization: Bearer`. */
  key: string;
  /**
   * The key of the tokens' fingerprints (HMAC-SHA-256), one word of at least 32 characters. Default: 32
   * random bytes per start, so a token issued before a restart and presented after it has another
   * fingerprint; give one to keep fingerprints comparable across restarts and gates.
   */
  fingerprintKey?: string;
  /** A file keeping what was not acknowledged across restarts. Default: none, in memory only. */
  spoolFile?: string;
  /** Largest spool file, in bytes. Default 67108864 (64 MiB). */
  spoolMaxBytes?: number;
  /** Exchanges held (not yet acknowledged) at most; past it new ones are dropped and counted. Default 10000. */
  bufferRecords?: number;
  /** Exchanges per batch at most. Default 1000. */
  batchRecords?: number;
  /** A batch is formed at least this often while exchanges wait, in ms. Default 1000. */
  flushIntervalMs?: number;
  /** Longest wait for the service's answer to one batch, in ms. Default 10000. */
  timeoutMs?: number;
  /** First pause after a failed send, doubling up to `retryMaxMs` (±20 %), in ms. Default 1000. */
  retryBaseMs?: number;
  /** Longest pause between sends of a batch (and the most a Retry-After is honoured), in ms. Default 60000. */
  retryMaxMs?: number;
  /** At close, how long the sender may go on sending what is held, in ms. Default 5000. */
  closeGraceMs?: number;
  /** Where the reporter's log lines go. Default: stderr, prefixed `partner-mock: evidence: `. */
  onLog?: (line: string) => void;
}

/** What `RunningMock.evidenceStatus()` reports. */
export interface EvidenceStatus {
  readonly url: string;
  /** `idle`: nothing to send or the last send succeeded; `sending`: a batch in flight; `retrying`: the last send failed. */
  readonly state: 'idle' | 'sending' | 'retrying';
  /** Exchanges recorded and not yet in a batch, and in batches not yet acknowledged. */
  readonly buffered: number;
  readonly pending: number;
  /** Exchanges and batches the service acknowledged. */
  readonly sent: { readonly records: number; readonly batches: number };
  /**
   * Exchanges lost: the buffer was full, the spool was full (or could not be written), or the service
   * refused them for good (a 4xx other than 401, 403, 408, 409, 429, or rejected records in a 2xx).
   */
  readonly dropped: {
    readonly bufferFull: number;
    readonly spoolFull: number;
    readonly refused: number;
    readonly total: number;
  };
  readonly lastError?: string;
  /** The spool file and its size; absent: in memory only. */
  readonly spool?: { readonly file: string; readonly bytes: number };
  /** `given` (`fingerprintKey`, `--evidence-fingerprint-key-file`) or `generated` at start. */
  readonly fingerprintKey: 'given' | 'generated';
}

/** The options checked, their defaults filled in. */
export type ResolvedEvidenceOptions = Required<Omit<EvidenceOptions, 'spoolFile' | 'fingerprintKey'>> & {
  spoolFile?: string;
  fingerprintKey?: string;
};

const fail = (message: string): never => {
  throw new MockError('ERR_MOCK_OPTIONS', message);
};

function integer(name: string, value: number | undefined, fallback: number, min: number, max: number) {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max)
    fail(`startMock: evidence.${name} must be an integer from ${min} to ${max}, got ${String(value)}.`);
  return value;
}

const word = (value: unknown, min: number) =>
  typeof value === 'string' && value.trim().length >= min && !/[\s\0]/.test(value.trim());

/** Checks `evidence` options; the defaults filled in. */
export function resolveEvidenceOptions(options: EvidenceOptions): ResolvedEvidenceOptions {
  if (typeof options !== 'object' || options === null)
    fail(
      'startMock: evidence must be { url, key } (the certification service evidence endpoint and a reporter key).',
    );
  let url: URL | undefined;
  try {
    url = typeof options.url === 'string' ? new URL(options.url) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.username !== '' || url.password !== '')
    fail(
      'startMock: evidence.url must be an http(s) URL without credentials, such as https://certify.example/evidence.',
    );
  if (!word(options.key, 1))
    fail(
      'startMock: evidence.key must be the evidence reporter key (one word, from `partner-certification-service admin add-evidence-reporter`).',
    );
  if (options.fingerprintKey !== undefined && !word(options.fingerprintKey, 32))
    fail(
      'startMock: evidence.fingerprintKey must be one word of at least 32 characters (e.g. from `openssl rand -base64 32`).',
    );
  const { spoolFile, onLog = (line: string) => process.stderr.write(`partner-mock: evidence: ${line}\n`) } =
    options;
  if (spoolFile !== undefined && (typeof spoolFile !== 'string' || spoolFile.trim() === ''))
    fail('startMock: evidence.spoolFile must be the path of the evidence spool file.');
  if (typeof onLog !== 'function') fail('startMock: evidence.onLog must be a function.');
  const bufferRecords = integer('bufferRecords', options.bufferRecords, 10_000, 1, 10_000_000);
  return {
    url: url!.href,
    key: options.key.trim(),
    ...(options.fingerprintKey === undefined ? {} : { fingerprintKey: options.fingerprintKey.trim() }),
    ...(spoolFile === undefined ? {} : { spoolFile }),
    spoolMaxBytes: integer('spoolMaxBytes', options.spoolMaxBytes, 64 * 1024 * 1024, 4096, 2 ** 40),
    bufferRecords,
    batchRecords: Math.min(bufferRecords, integer('batchRecords', options.batchRecords, 1000, 1, 100_000)),
    flushIntervalMs: integer('flushIntervalMs', options.flushIntervalMs, 1000, 10, 3_600_000),
    timeoutMs: integer('timeoutMs', options.timeoutMs, 10_000, 1, 600_000),
    retryBaseMs: integer('retryBaseMs', options.retryBaseMs, 1000, 1, 3_600_000),
    retryMaxMs: integer('retryMaxMs', options.retryMaxMs, 60_000, 1, 3_600_000),
    closeGraceMs: integer('closeGraceMs', options.closeGraceMs, 5000, 0, 600_000),
    onLog,
  };
}
