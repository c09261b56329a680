import { scenarioNames } from '@partner-lending/conformance';
import { scopes } from '@partner-lending/spec';

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

const runIdParameter = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

/** The service's OpenAPI 3.1 document (served at `/openapi.json`). */
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
      '/api/runs': {
        post: {
          operationId: 'createRun',
          summary: 'Create a run',
          requestBody: {
            required: false,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/RunRequest' } } },
          },
          responses: {
            '201': {
              description:
                'The run: its addresses, its client credentials (shown once), its plan and deadline.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/CreatedRun' } } },
            },
            '400': problemResponse(
              'The body is not a valid run request, or a certification run was asked to change the vendor’s plan.',
            ),
            '401': problemResponse('No API key, or an unknown one.'),
            '413': problemResponse('The body is too large.'),
            '429': problemResponse(
              'Too many open runs, or too many runs created in the last hour (see Retry-After).',
            ),
          },
        },
        get: {
          operationId: 'listRuns',
          summary: 'Your runs, newest first (at most 100)',
          responses: {
            '200': { description: 'Runs.' },
            '401': problemResponse('No API key, or an unknown one.'),
          },
        },
      },
      '/api/runs/{id}': {
        get: {
          operationId: 'getRun',
          summary: 'A run: its status and, once judged, its report (the JSON report of partner-conformance)',
          parameters: [runIdParameter],
          responses: {
            '200': {
              description: 'The run.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Run' } } },
            },
            '404': problemResponse('No run of yours has this id.'),
          },
        },
      },
      '/api/runs/{id}/finish': {
        post: {
          operationId: 'finishRun',
          summary: 'Finish a run: it is judged now',
          parameters: [runIdParameter],
          requestBody: {
            required: false,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  additionalProperties: false,
                  properties: { journeyExitCode: { type: ['integer', 'null'], minimum: -255, maximum: 255 } },
                },
              },
            },
          },
          responses: {
            '200': {
              description: 'The judged run.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Run' } } },
            },
            '404': problemResponse('No run of yours has this id.'),
            '409': problemResponse('The run has already ended.'),
          },
        },
      },
      '/api/runs/{id}/report.html': {
        get: {
          operationId: 'getRunReportHtml',
          parameters: [runIdParameter],
          summary: 'The HTML report',
          responses: { '200': { description: 'HTML.' }, '409': problemResponse('Not judged yet.') },
        },
      },
      '/api/runs/{id}/session': {
        get: {
          operationId: 'getRunSession',
          parameters: [runIdParameter],
          summary:
            'The recorded session (redacted; `partner-conformance client --judge` reads it); the attestation subject is its SHA-256',
          responses: {
            '200': { description: 'The session file.' },
            '409': problemResponse('Not judged yet.'),
          },
        },
      },
      '/api/runs/{id}/attestation': {
        get: {
          operationId: 'getRunAttestation',
          parameters: [runIdParameter],
          summary: 'The DSSE envelope of the in-toto test-result statement',
          responses: { '200': { description: 'The envelope.' }, '409': problemResponse('Not judged yet.') },
        },
      },
      '/api/decisions': {
        get: {
          operationId: 'listDecisions',
          summary:
            'Your production decisions (which run, when, approved or rejected, the note), newest first',
          responses: {
            '200': {
              description: 'Decisions.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Decisions' } } },
            },
            '401': problemResponse('No API key, or an unknown one.'),
          },
        },
      },
      '/.well-known/jwks.json': {
        get: {
          operationId: 'getJwks',
          security: [],
          summary: 'The public keys that verify attestations (every key that ever signed)',
          responses: { '200': { description: 'A JWKS.' } },
        },
      },
    },
    components: {
      securitySchemes: {
        partnerKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'The API key the vendor issued to your organisation.',
        },
      },
      schemas: {
        Problem: {
          type: 'object',
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
          },
        },
        RunRequest: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ttlSeconds: {
              type: 'integer',
              minimum: 1,
              maximum: 86400,
              default: 5,
              description: 'Token lifetime of the short phase (`--ttl`). Practice runs only.',
            },
            longTtlSeconds: {
              type: 'integer',
              minimum: 600,
              default: 3600,
              description: 'Token lifetime after it (`--long-ttl`). Practice runs only.',
            },
            scenarios: {
              type: 'array',
              items: { enum: [...scenarioNames] },
              description: 'The scenario steps to play (default all; [] for none). Practice runs only.',
            },
            scopes: {
              type: 'array',
              items: { enum: [...scopes] },
              minItems: 1,
              uniqueItems: true,
              description:
                'An array of scope names (not one space-separated string): the grant under narrowed-grant (default ["read:loans", "create:loan_draft"]). Practice runs only.',
            },
            integration: {
              type: 'object',
              additionalProperties: false,
              properties: {
                name: { type: 'string', maxLength: 100 },
                version: { type: 'string', maxLength: 100 },
              },
            },
            certify: {
              type: 'boolean',
              default: false,
              description:
                'A certification run: it follows the vendor’s certification plan and `--certify` rules (a skipped must check or a journey that did not exit 0 fails it); with it, ttlSeconds, longTtlSeconds, scenarios and scopes are refused (400). Without it, a practice run: overrides allowed, never approvable.',
            },
          },
        },
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
                  decision: { enum: ['approved', 'rejected', 'revoked', 'expired'] },
                  at: { type: 'string', format: 'date-time' },
                  reviewer: {
                    type: ['object', 'null'],
                    description: 'Who decided (null for a decision of the service itself).',
                    properties: { name: { type: 'string' } },
                  },
                  note: { type: 'string' },
                  scopes: { type: 'array', items: { type: 'string' } },
                  validUntil: { type: ['string', 'null'], format: 'date-time' },
                },
              },
            },
          },
        },
        Run: {
          type: 'object',
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
              description: 'The JSON report of partner-conformance (schemaVersion 3), with run: {id, url}.',
            },
          },
        },
      },
    },
  };
}
