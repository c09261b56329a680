import { evidenceAttributes } from './records.js';
import { defaultEvidenceLimits } from './routes.js';

const problem = (description: string, retry = false) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  ...(retry && { headers: { 'Retry-After': { schema: { type: 'integer' } } } }),
});

const exportResponse = {
  type: 'object',
  description:
    'OTLP ExportLogsServiceResponse: empty when every record was stored; else partialSuccess with the records not stored and why.',
  properties: {
    partialSuccess: {
      type: 'object',
      properties: {
        rejectedLogRecords: { type: ['integer', 'string'] },
        errorMessage: { type: 'string' },
      },
    },
  },
};

const otlpBody = {
  type: 'object',
  description:
    'OTLP ExportLogsServiceRequest (JSON encoding): resourceLogs[].scopeLogs[].logRecords[], each with timeUnixNano (or observedTimeUnixNano) and attributes (key, AnyValue).',
  properties: { resourceLogs: { type: 'array', items: { type: 'object' } } },
};

/** `POST /evidence` in /openapi.json. */
export const evidencePaths = {
  '/evidence': {
    post: {
      operationId: 'postEvidence',
      summary: 'Production evidence: OTLP/HTTP logs of the exchanges a production gateway served',
      description: `For an evidence reporter (partner-certification-service admin add-evidence-reporter). Each log record is one exchange; its time (timeUnixNano, else observedTimeUnixNano) is when it was served. Attributes required: ${evidenceAttributes.required.join(', ')}; optional: ${evidenceAttributes.optional.join(', ')} (oauth.grant_type present: a token request; oauth.scope.granted a space-separated string or an array; oauth.token.expires_in seconds; http.response.header.retry-after a string or an array of strings). A record missing or misusing one, or about a partner the service does not know, is not stored and is counted in partialSuccess; a record any of whose attributes looks like a token (an attribute named authorization, access_token and the like, a Bearer value or a JWT) is never stored. A batch is identified by its Idempotency-Key, else the SHA-256 of its body: sent again, it is answered as the first time and stored once. At most ${defaultEvidenceLimits.maxBodyBytes} bytes (also once inflated: Content-Encoding gzip is read) and ${defaultEvidenceLimits.maxRecords} records a batch.`,
      security: [{ evidenceKey: [] }],
      parameters: [
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'The batch id (1 to 200 printable ASCII characters); default the SHA-256 of the body.',
          schema: { type: 'string', maxLength: 200 },
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: otlpBody },
          'application/x-protobuf': { schema: { type: 'string', format: 'binary' } },
        },
      },
      responses: {
        '200': {
          description: 'Stored (or received before). The answer is in the encoding of the request.',
          content: {
            'application/json': { schema: exportResponse },
            'application/x-protobuf': { schema: { type: 'string', format: 'binary' } },
          },
        },
        '400': problem('The body is not OTLP logs in its content type, or the Idempotency-Key is malformed.'),
        '401': problem('No evidence reporter key, or an unknown one.'),
        '413': problem(
          `The body is larger than ${defaultEvidenceLimits.maxBodyBytes} bytes (sent or inflated), or holds more than ${defaultEvidenceLimits.maxRecords} records.`,
        ),
        '415': problem(
          'Not application/json or application/x-protobuf, or a content encoding other than gzip.',
        ),
        '429': problem(
          'This instance is storing as many batches as it allows: send again after Retry-After.',
          true,
        ),
        '503': problem(
          'Evidence cannot be stored just now (the database): send again after Retry-After.',
          true,
        ),
      },
    },
  },
};

export const evidenceSecurityScheme = {
  evidenceKey: {
    type: 'http',
    scheme: 'bearer',
    description: 'An evidence reporter key (partner-certification-service admin add-evidence-reporter).',
  },
};
