import { z } from 'zod';
import { evidencePaths, evidenceSecurityScheme } from '../evidence/openapi.js';
import { noteMaxLength, noteRule } from '../production/decisions/note.js';
import { planFields } from '../runs/types.js';
import { productionPaths, productionSchemas, registerSecurityScheme } from './production-openapi.js';
import { finishSchema, runRequestSchema } from './schemas.js';

/** A request body's JSON Schema, from the zod schema that validates it (so the two cannot disagree). */
const bodySchema = (schema: z.ZodType) => {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return json;
};

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});
const retryAfter = {
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'string' } },
};
const limited = (description: string) => ({ ...problem(description), headers: retryAfter });
const json = (description: string, schema: object = { type: 'object' }) => ({
  description,
  content: { 'application/json': { schema } },
});

/** What every API operation may answer besides its own statuses. */
const common = {
  '401': problem('No API key, or an unknown one (with a `WWW-Authenticate: Bearer` challenge).'),
  '429': limited(
    'This partner sent too many requests, or has too many in flight (see Retry-After); for a creation, also too many open runs or runs this hour.',
  ),
  '503': limited(
    'The service cannot reach its database just now, or (finishing a run) could not judge it and left it open (see Retry-After).',
  ),
};
/** What an operation with a body may answer besides. */
const withBody = {
  '400': problem(
    'The body is not valid JSON, not valid for this operation, or holds text the service cannot store.',
  ),
  '413': problem('The body is larger than 16 KiB.'),
  '415': problem('The body is not application/json.'),
};
const runId = { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const noRun = { '404': problem('No run of yours has this id.') };
const notJudged = {
  '409': problem('The run is still open: finish it or wait until it ends.'),
  '410': problem(
    'Deleted by retention: the run ended longer ago than the service keeps runs no decision rests on.',
  ),
};

/**
 * The service's OpenAPI 3.1 document (served at `/openapi.json`): the request bodies are the JSON
 * Schemas of the zod schemas that validate them (`schemas.ts`), and every status and content type an
 * operation answers is listed (a fuzz test of every operation keeps it so).
 */
export function openApiDocument(publicUrl: string) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Partner Lending certification service',
      version: '1',
      description:
        'Hosted certification runs of a partner integration: create a run, point your program at its token endpoint and partner API, finish it, and fetch the signed verdict. Errors are RFC 9457 problem details.',
    },
    servers: [{ url: publicUrl }],
    security: [{ partnerKey: [] }],
    paths: {
      ...productionPaths,
      ...evidencePaths,
      '/api/runs': {
        post: {
          operationId: 'createRun',
          summary: 'Create a run',
          requestBody: {
            required: false,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/RunRequest' } } },
          },
          responses: {
            '201': json(
              'The run: its addresses, its client credentials (shown once), its plan and deadline.',
              { $ref: '#/components/schemas/CreatedRun' },
            ),
            ...withBody,
            ...common,
          },
        },
        get: {
          operationId: 'listRuns',
          summary: 'Your runs, newest first (at most 100)',
          responses: { '200': json('Runs.'), ...common },
        },
      },
      '/api/runs/{id}': {
        get: {
          operationId: 'getRun',
          summary: 'A run: its status and, once judged, its report (the JSON report of partner-conformance)',
          parameters: [runId],
          responses: {
            '200': json('The run.', { $ref: '#/components/schemas/Run' }),
            ...noRun,
            ...common,
          },
        },
      },
      '/api/runs/{id}/finish': {
        post: {
          operationId: 'finishRun',
          summary: 'Finish a run: it is judged now',
          parameters: [runId],
          requestBody: {
            required: false,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/FinishRequest' } } },
          },
          responses: {
            '200': json('The judged run.', { $ref: '#/components/schemas/Run' }),
            ...withBody,
            ...noRun,
            '409': problem('The run has already ended.'),
            ...common,
          },
        },
      },
      '/api/runs/{id}/report.html': {
        get: {
          operationId: 'getRunReportHtml',
          parameters: [runId],
          summary: 'The HTML report',
          responses: {
            '200': { description: 'HTML.', content: { 'text/html': { schema: { type: 'string' } } } },
            ...noRun,
            ...notJudged,
            ...common,
          },
        },
      },
      '/api/runs/{id}/session': {
        get: {
          operationId: 'getRunSession',
          parameters: [runId],
          summary:
            'The recorded session (redacted; `partner-conformance client --judge` reads it); the attestation subject is its SHA-256',
          responses: { '200': json('The session file.'), ...noRun, ...notJudged, ...common },
        },
      },
      '/api/runs/{id}/attestation': {
        get: {
          operationId: 'getRunAttestation',
          parameters: [runId],
          summary: 'The DSSE envelope of the in-toto test-result statement',
          responses: { '200': json('The envelope.'), ...noRun, ...notJudged, ...common },
        },
      },
      '/api/decisions': {
        get: {
          operationId: 'listDecisions',
          summary:
            'Your production decisions (which run, when, approved or rejected, the note), newest first',
          responses: {
            '200': json('Decisions.', { $ref: '#/components/schemas/Decisions' }),
            ...common,
          },
        },
      },
      '/.well-known/jwks.json': {
        get: {
          operationId: 'getJwks',
          security: [],
          summary: 'The public keys that verify attestations (every key that ever signed)',
          responses: { '200': json('A JWKS.'), '503': common['503'] },
        },
      },
      '/healthz': {
        get: {
          operationId: 'getHealth',
          security: [],
          summary: 'Liveness: the process answers (no database involved)',
          responses: { '200': json('Alive.') },
        },
      },
      '/readyz': {
        get: {
          operationId: 'getReadiness',
          security: [],
          summary: 'Readiness: database reachable, migrations current, attestation key published',
          responses: {
            '200': json('Ready.', { $ref: '#/components/schemas/Readiness' }),
            '503': {
              ...json('Not ready: which check failed.', { $ref: '#/components/schemas/Readiness' }),
              headers: retryAfter,
            },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        ...registerSecurityScheme,
        ...evidenceSecurityScheme,
        partnerKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'The API key the vendor issued to your organisation.',
        },
      },
      schemas: {
        ...productionSchemas,
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'detail'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
          },
        },
        RunRequest: {
          ...bodySchema(runRequestSchema),
          // A certification run follows the vendor's plan: the practice-run fields are refused with it.
          if: { properties: { certify: { const: true } }, required: ['certify'] },
          // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a promise
          then: {
            not: { anyOf: planFields.map((field) => ({ required: [field] })) },
            description: `With "certify": true, none of ${planFields.join(', ')}: the plan is the vendor's (400 otherwise). Without it, a practice run: any of them, never approvable.`,
          },
        },
        FinishRequest: bodySchema(finishSchema),
        CreatedRun: {
          type: 'object',
          required: [
            'id',
            'authUrl',
            'baseUrl',
            'tokenUrl',
            'audience',
            'clientId',
            'clientSecret',
            'authorizedScopes',
            'plan',
            'expiresAt',
          ],
          properties: {
            id: { type: 'string' },
            authUrl: { type: 'string' },
            baseUrl: { type: 'string' },
            tokenUrl: { type: 'string' },
            audience: { type: 'string' },
            clientId: { type: 'string' },
            clientSecret: { type: 'string' },
            authorizedScopes: { type: 'array', items: { type: 'string' } },
            plan: { type: 'array', items: { type: 'object' } },
            ttlSeconds: { type: 'integer' },
            longTtlSeconds: { type: 'integer' },
            certify: { type: 'boolean' },
            kind: { enum: ['certification', 'practice'] },
            certificationPlan: {
              type: ['object', 'null'],
              properties: { id: { type: 'string' }, digest: { type: 'string' } },
            },
            expiresAt: { type: 'string', format: 'date-time' },
            idleSeconds: { type: 'integer' },
          },
        },
        Decisions: {
          type: 'object',
          required: ['decisions'],
          properties: {
            decisions: {
              type: 'array',
              items: {
                type: 'object',
                required: ['id', 'runId', 'decision', 'at', 'reviewer', 'note', 'validUntil'],
                properties: {
                  id: { type: 'string' },
                  runId: { type: 'string' },
                  decision: { enum: ['approved', 'rejected', 'revoked', 'expired', 'suspended'] },
                  at: { type: 'string', format: 'date-time' },
                  reviewer: {
                    type: ['object', 'null'],
                    description: 'Who decided (null for a decision of the service itself).',
                    properties: { name: { type: 'string' } },
                  },
                  note: {
                    type: 'string',
                    maxLength: noteMaxLength,
                    description: `Why, in the reviewer's words (or the service's, for an expiry): ${noteRule}. Reviewers write it in the reviewer pages (approve, reject, revoke), which refuse any other note with 400: a page, or an RFC 9457 problem when the form's sender accepts application/problem+json.`,
                  },
                  scopes: { type: 'array', items: { type: 'string' } },
                  validUntil: { type: ['string', 'null'], format: 'date-time' },
                },
              },
            },
            production: {
              type: 'object',
              description:
                'Your production standing (absent: never approved): the register entry, and expiring when an active approval ends within the notice period (--expiry-notice-days). Re-certify before validUntil: a new approved run replaces the approval.',
              required: ['partnerId', 'status', 'scopes', 'validUntil', 'decisionId', 'expiring'],
              properties: {
                partnerId: { type: 'string' },
                status: { enum: ['active', 'suspended', 'revoked', 'expired'] },
                scopes: { type: 'array', items: { type: 'string' } },
                validUntil: { type: ['string', 'null'], format: 'date-time' },
                decisionId: { type: 'string' },
                expiring: { type: 'boolean' },
              },
            },
          },
        },
        Run: {
          type: 'object',
          required: ['id', 'status', 'createdAt'],
          properties: {
            id: { type: 'string' },
            status: { enum: ['open', 'judged', 'interrupted'] },
            createdAt: { type: 'string', format: 'date-time' },
            finishedAt: { type: ['string', 'null'], format: 'date-time' },
            integration: { type: ['object', 'null'] },
            verdict: { type: ['string', 'null'], enum: ['PASS', 'FAIL', null] },
            kind: { enum: ['certification', 'practice'] },
            partner: {
              type: ['object', 'null'],
              properties: { id: { type: 'string' }, name: { type: 'string' } },
            },
            plan: {
              type: ['object', 'null'],
              description: 'The certification plan the run followed (null for a practice run).',
              properties: { id: { type: 'string' }, digest: { type: 'string' } },
            },
            coverage: {
              type: ['object', 'null'],
              description:
                'Once judged: each operation (calls, successes), each scenario of the plan (met or not), the must checks not verified.',
            },
            approvable: { type: 'boolean' },
            notApprovable: {
              type: 'array',
              items: { type: 'string' },
              description: 'Why a reviewer cannot approve on this run (empty when approvable).',
            },
            decision: {
              type: ['object', 'null'],
              description: 'The latest production decision on this run.',
            },
            report: {
              type: ['object', 'null'],
              description: 'The JSON report of partner-conformance, with run: {id, url}.',
            },
          },
        },
        Readiness: {
          type: 'object',
          required: ['status', 'checks'],
          properties: {
            status: { enum: ['ready', 'unavailable'] },
            checks: {
              type: 'object',
              properties: {
                database: { enum: ['ok', 'unreachable'] },
                migrations: { enum: ['ok', 'behind', 'unknown'] },
                signingKey: { enum: ['ok', 'not published', 'unknown'] },
                accepting: {
                  enum: ['ok', 'stopping'],
                  description:
                    'stopping from the moment the instance was told to stop (SIGTERM), while it still serves for --shutdown-delay seconds',
                },
              },
            },
          },
        },
      },
    },
  };
}
