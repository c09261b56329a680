import { evidencePaths, evidenceSecurityScheme } from '../evidence/openapi.js';
import { common, json, retryAfter } from './openapi-responses.js';
import { productionPaths, productionSchemas, registerSecurityScheme } from './production-openapi.js';
import { runPaths, runSchemas } from './runs-openapi.js';

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
      ...runPaths(),
      ...servicePaths(),
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
        Problem: problemSchema,
        ...runSchemas(),
        Readiness: readinessSchema,
      },
    },
  };
}

/** The service's own paths: the JWKS, liveness and readiness. */
function servicePaths() {
  return {
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
        summary:
          'Readiness: database reachable, migrations current, attestation key published, start-up warm-up done',
        responses: {
          '200': json('Ready.', { $ref: '#/components/schemas/Readiness' }),
          '503': {
            ...json('Not ready: which check failed (`checks.warmUp: "warming up"` while it warms up).', {
              $ref: '#/components/schemas/Readiness',
            }),
            headers: retryAfter,
          },
        },
      },
    },
  };
}

/** An RFC 9457 problem, as every refusal answers. */
const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
  },
};

/** GET /readyz's answer. */
const readinessSchema = {
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
        warmUp: {
          enum: ['warming up', 'ok', 'off', 'failed', 'overran'],
          description:
            'the start-up warm-up (a throwaway run driven, then deleted): "warming up" (503) until it is done (ok); off with --no-warm-up; failed or overran (its 30-s deadline passed) are ready anyway',
        },
      },
    },
  },
};
