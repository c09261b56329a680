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
 * One JSON line per event: `level` (a word), `time` (ISO 8601), `msg`, and the event's ids
 * (`requestId`, `runId`, `partnerId`) where it has them. Written synchronously so that nothing is lost
 * when the process exits after a SIGTERM.
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
    options.destination ?? pino.destination({ fd: 1, sync: true }),
  );
}
