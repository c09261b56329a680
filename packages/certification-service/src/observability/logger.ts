import { type DestinationStream, type Logger, pino } from 'pino';
import { tool } from '../version.js';

export type { Logger };

/**
 * Where the service's parts write a line: the message, and the event's fields (`runId`, `partnerId`, …)
 * where it has them. `startService` binds it to the logger (`--log-format json`) or to stderr.
 */
export type LogLine = (line: string, fields?: Record<string, unknown>) => void;

/**
 * Field names whose values are never written, wherever they appear in a line (one level down too):
 * secrets, keys, credentials and tokens. The service does not put them in its lines; this is the
 * second lock on the door.
 */
export const redactedFields = [
  'authorization',
  'cookie',
  'secret',
  'clientSecret',
  'client_secret',
  'apiKey',
  'api_key',
  'credential',
  'token',
  'accessToken',
  'access_token',
  'password',
  'key',
  'privateKey',
];
const redactPaths = [
  ...redactedFields,
  ...redactedFields.map((field) => `*.${field}`),
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
];

/**
 * Lines are written to stdout once this many bytes are buffered (about a dozen request lines), and what
 * is buffered every `logFlushMs` whatever its size: under load one write carries a dozen lines rather
 * than one (a write of each line cost the HTTP thread about 30 µs and libuv's pool a system call, a
 * call); a line waits at most `logFlushMs` before it leaves.
 */
export const logBufferBytes = 4096;

/** How often what is buffered is written whatever its size (see `logBufferBytes`). */
export const logFlushMs = 100;

/**
 * One JSON line per event: `level` (a word), `time` (ISO 8601), `msg`, and the event's ids
 * (`requestId`, `runId`, `partnerId`) where it has them. Written asynchronously: a line is appended to a
 * buffer and written with the lines before it (see `logBufferBytes`) once the write in flight is done,
 * so the HTTP thread never waits for the reader of stdout (a synchronous write to a pipe cost the
 * thread 180 µs a line on a busy 2-core machine, about a third of a call). Pino writes what is
 * buffered when the process exits, after a SIGTERM's stop or an uncaught error too; only a SIGKILL can
 * lose the last lines.
 */
export function createLogger(options: { destination?: DestinationStream; level?: string } = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'partner-certification-service', version: tool.version },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    options.destination ??
      pino.destination({ fd: 1, sync: false, minLength: logBufferBytes, periodicFlush: logFlushMs }),
  );
}

/**
 * The logger of the request lines (one per request answered): `logger` without its redaction pass.
 * Those lines hold only fields the request observer makes itself (ids, method, a path cut at the run's
 * address and without its query, status, duration: `requestLineFields`), none a redacted name, and
 * redaction cost 20 µs a line, as much as the rest of the line.
 */
export function requestLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

/** Every field a request line may have (test/logs.test.ts holds them apart from `redactedFields`). */
export const requestLineFields = [
  'event',
  'requestId',
  'traceId',
  'method',
  'path',
  'status',
  'aborted',
  'durationMs',
  'stage',
  'runId',
  'partnerId',
] as const;
