import { registerStatuses } from '@partner-lending/mock';
import { webhookEventTypes } from '../outbox/events.js';

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

const registerAnswer = {
  '200': {
    description:
      'A compact JWS (typ partner-register+jwt) signed with the attestation key (kid in /.well-known/jwks.json) of {iss, iat, exp, seq, partners}; seq is strictly higher in every register the service signs (a reader takes only a higher one, so no older copy can be replayed to it); ETag and Cache-Control: max-age=<--register-max-age>, never beyond what is left of the copy’s life.',
    content: { 'application/jwt': { schema: { type: 'string' } } },
    headers: {
      ETag: { schema: { type: 'string' } },
      'Cache-Control': { schema: { type: 'string', example: 'max-age=60' } },
    },
  },
  '304': { description: 'Not modified: the If-None-Match ETag is the current document.' },
  '401': problem('No register reader key, or an unknown one.'),
};

/** The production flow's paths of /openapi.json: decision statements and the register. */
export const productionPaths = {
  '/api/decisions/{id}/statement': {
    get: {
      operationId: 'getDecisionStatement',
      summary: 'A decision about you, signed',
      description: `A DSSE envelope (payloadType application/vnd.in-toto+json) of an in-toto Statement v1, predicateType https://partner-lending.dev/certification-decision/v1: subject the run's attestation ({runId}.attestation.json and its SHA-256), predicate {partner: {id, name}, decision, scopes, reviewer: {name}, at, validUntil, note, runId}. Verify it with partner-conformance verify and the service's JWKS. Webhooks, when the operator registered any, announce decisions (Standard Webhooks 1.0) as ${webhookEventTypes.join(', ')}.`,
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': {
          description: 'The signed decision (also a download, {id}.decision.json).',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/DsseEnvelope' } } },
        },
        '401': problem('No API key, or an unknown one.'),
        '404': problem('No signed decision about you has this id.'),
      },
    },
  },
  '/api/production/regressions': {
    get: {
      operationId: 'listRegressions',
      summary: 'Your regressions on production, with their evidence',
      description:
        'A regression is a decisive check of the certification plan failing on your production traffic, as the production side reported it (each token as a keyed fingerprint, never the token). Newest first, at most 100. policy is the service’s (--on-regression): notify announces it; suspend also suspends an active partner (the register says suspended) until a reviewer approves a certification run again. consequence says what it did: suspended, notified (you stayed active) or unchanged (you were not active). Webhooks announce it as partner.regressed (then partner.suspended, and partner.reinstated on a new approval).',
      responses: {
        '200': {
          description: 'Your regressions (only yours).',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['regressions'],
                properties: {
                  regressions: { type: 'array', items: { $ref: '#/components/schemas/Regression' } },
                },
              },
            },
          },
        },
        '401': problem('No API key, or an unknown one.'),
      },
    },
  },
  '/api/production/regressions/{id}/statement': {
    get: {
      operationId: 'getRegressionStatement',
      summary: 'A regression of yours, signed',
      description:
        "A DSSE envelope (payloadType application/vnd.in-toto+json) of an in-toto Statement v1, predicateType https://partner-lending.dev/certification-regression/v1: subject your certification (partner/{partnerId}/{runId}.attestation.json and the SHA-256 of the run's attestation, or partner/{partnerId}/evidence and the SHA-256 of the exchanges when you were never approved), predicate {regressionId, partner: {id, name}, check, detail, at, window: {from, to}, exchanges, policy, consequence, suspensionId, runId, plan: {id, digest}, recordedAt}. Signed with the attestation key: verify it with the service's JWKS.",
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': {
          description: 'The signed regression (also a download, {id}.regression.json).',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/DsseEnvelope' } } },
        },
        '401': problem('No API key, or an unknown one.'),
        '404': problem('No regression of yours has this id.'),
      },
    },
  },
  '/register': {
    get: {
      operationId: 'getRegister',
      summary: 'The register: every partner with a production standing (for the production side)',
      security: [{ registerKey: [] }],
      responses: registerAnswer,
    },
  },
  '/register/changes': {
    get: {
      operationId: 'getRegisterChanges',
      summary: 'Whether the register changed: a long poll for the production side',
      description:
        'Held until the whole register’s seq is above `after` (what the register says changed since the copy the reader holds: a decision recorded on any instance), then `{changed: true, seq}`; without `after`, answered at once. After the hold (25 s) `{changed: false, seq}`: ask again. It carries no entry and no secret — read GET /register (or the partner’s entry) again, which stays the signed, fail-closed source.',
      security: [{ registerKey: [] }],
      parameters: [
        {
          name: 'after',
          in: 'query',
          required: false,
          description: 'The seq of the register copy held, or of the last answer.',
          schema: { type: 'integer', minimum: 0 },
        },
      ],
      responses: {
        '200': {
          description: 'Changed (read the register again), or not within the hold (ask again).',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['changed', 'seq'],
                properties: {
                  changed: { type: 'boolean' },
                  seq: {
                    type: 'integer',
                    minimum: 0,
                    description: 'The seq of the whole register’s current copy: the next poll’s after.',
                  },
                },
              },
            },
          },
          headers: { 'Cache-Control': { schema: { type: 'string', example: 'no-store' } } },
        },
        '400': problem('after is not an integer.'),
        '401': problem('No register reader key, or an unknown one.'),
        '429': {
          ...problem('This register reader key holds too many polls already (one per gate is enough).'),
          headers: { 'Retry-After': { schema: { type: 'integer' } } },
        },
        '503': {
          ...problem('This instance holds as many polls as it allows, or is shutting down.'),
          headers: { 'Retry-After': { schema: { type: 'integer' } } },
        },
      },
    },
  },
  '/register/partners/{partnerId}': {
    get: {
      operationId: 'getRegisterEntry',
      summary: "One partner's production standing, in the same signed shape",
      security: [{ registerKey: [] }],
      parameters: [{ name: 'partnerId', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        ...registerAnswer,
        '404': problem('The partner has no approval, revocation or expiry on record.'),
      },
    },
  },
};

const exchangeSchema = {
  type: 'object',
  description:
    'One exchange the production side served, as its evidence reported it (never a token or a body).',
  required: ['at', 'partnerId', 'kind', 'method', 'path', 'status', 'reporterId'],
  properties: {
    at: { type: 'integer', description: 'ms since the epoch' },
    partnerId: { type: 'string' },
    kind: { enum: ['token', 'api'] },
    method: { type: 'string' },
    path: { type: 'string' },
    status: { type: 'integer' },
    fingerprint: { type: 'string', description: 'A keyed hash of the token issued or presented.' },
    scopesGranted: { type: 'array', items: { type: 'string' } },
    expiresAt: { type: 'integer' },
    retryAfterSeconds: { type: 'number' },
    error: { type: 'string' },
    reporterId: { type: 'string' },
  },
};

/** The schemas those paths use, and the register reader's security scheme. */
export const productionSchemas = {
  Regression: {
    type: 'object',
    required: [
      'id',
      'check',
      'detail',
      'at',
      'window',
      'exchanges',
      'policy',
      'consequence',
      'suspensionId',
      'runId',
      'recordedAt',
      'resolvedAt',
      'resolvedBy',
    ],
    properties: {
      id: { type: 'string' },
      check: { type: 'string', description: 'The plan check that failed on production.' },
      detail: { type: 'string' },
      at: { type: 'string', format: 'date-time' },
      window: {
        type: 'object',
        required: ['from', 'to'],
        properties: {
          from: { type: 'string', format: 'date-time' },
          to: { type: 'string', format: 'date-time' },
        },
      },
      exchanges: { type: 'array', maxItems: 20, items: exchangeSchema },
      policy: { enum: ['notify', 'suspend'] },
      consequence: { enum: ['notified', 'suspended', 'unchanged'] },
      suspensionId: { type: ['string', 'null'], description: 'The suspension decision it caused.' },
      runId: { type: ['string', 'null'], description: 'The run your approval rested on.' },
      recordedAt: { type: 'string', format: 'date-time' },
      resolvedAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description: 'When a later approval settled it.',
      },
      resolvedBy: { type: ['string', 'null'], description: 'That approval.' },
    },
  },
  DsseEnvelope: {
    type: 'object',
    required: ['payloadType', 'payload', 'signatures'],
    properties: {
      payloadType: { type: 'string' },
      payload: { type: 'string', description: 'base64 of the in-toto Statement' },
      signatures: {
        type: 'array',
        items: { type: 'object', properties: { keyid: { type: 'string' }, sig: { type: 'string' } } },
      },
    },
  },
  RegisterPayload: {
    type: 'object',
    description: 'The payload of the register JWS.',
    required: ['iss', 'iat', 'exp', 'seq', 'partners'],
    properties: {
      iss: { type: 'string' },
      iat: { type: 'integer' },
      exp: { type: 'integer' },
      seq: {
        type: 'integer',
        minimum: 1,
        description:
          'Strictly increasing over every register this service signs (all its instances), never reused: a production gate takes only a copy with a higher seq than the last it took (or that very copy again).',
      },
      partners: {
        type: 'array',
        items: {
          type: 'object',
          required: ['partnerId', 'name', 'status', 'scopes', 'validUntil', 'decisionId'],
          properties: {
            partnerId: { type: 'string' },
            name: { type: 'string' },
            status: {
              enum: [...registerStatuses],
              description:
                'suspended: the service holds the approval on a regression (serve --on-regression suspend) until a reviewer approves a certification run again (active) or revokes (revoked); no token is to be issued meanwhile.',
            },
            scopes: {
              type: 'array',
              items: { type: 'string' },
              description: 'The approved scopes; empty unless active.',
            },
            validUntil: { type: ['string', 'null'], format: 'date-time' },
            decisionId: { type: 'string' },
          },
        },
      },
    },
  },
};

export const registerSecurityScheme = {
  registerKey: {
    type: 'http',
    scheme: 'bearer',
    description: 'A register reader key (partner-certification-service admin add-register-reader).',
  },
};
