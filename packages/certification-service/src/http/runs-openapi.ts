import { registerStatuses } from '@partner-lending/mock';
import { noteMaxLength, noteRule } from '../production/decisions/note.js';
import { planFields } from '../runs/types.js';
import { bodySchema, common, json, problem, withBody } from './openapi-responses.js';
import { finishSchema, runRequestSchema } from './schemas.js';

// The partner API's runs and decisions in /openapi.json: their paths, and the schemas of their bodies
// and answers.

const runId = { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const noRun = { '404': problem('No run of yours has this id.') };
const notJudged = {
  '409': problem('The run is still open: finish it or wait until it ends.'),
  '410': problem(
    'Deleted by retention: the run ended longer ago than the service keeps runs no decision rests on.',
  ),
};

/** The paths of runs (create, list, read, finish, the report, session and attestation) and of decisions. */
export function runPaths() {
  return {
    '/api/runs': {
      post: {
        operationId: 'createRun',
        summary: 'Create a run',
        requestBody: {
          required: false,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/RunRequest' } } },
        },
        responses: {
          '201': json('The run: its addresses, its client credentials (shown once), its plan and deadline.', {
            $ref: '#/components/schemas/CreatedRun',
          }),
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
        summary: 'Your production decisions (which run, when, approved or rejected, the note), newest first',
        responses: {
          '200': json('Decisions.', { $ref: '#/components/schemas/Decisions' }),
          ...common,
        },
      },
    },
  };
}

/** The run's schemas: its request, its finish, the created run, a run, and a partner's decisions. */
export function runSchemas() {
  return {
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
    CreatedRun: createdRunSchema,
    Decisions: decisionsSchema,
    Run: runSchema,
  };
}

/** The answer to POST /api/runs. */
const createdRunSchema = {
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
};

/** The answer to GET /api/decisions: the partner's decisions and production standing. */
const decisionsSchema = {
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
        status: { enum: [...registerStatuses] },
        scopes: { type: 'array', items: { type: 'string' } },
        validUntil: { type: ['string', 'null'], format: 'date-time' },
        decisionId: { type: 'string' },
        expiring: { type: 'boolean' },
      },
    },
  },
};

/** A run as the API shows it (GET /api/runs/{id}, a finish's answer). */
const runSchema = {
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
};
