import * as z from 'zod';

/**
 * The schema of a session file (sessionVersion 2): what `--judge` and `verify` accept. A session is
 * hostile input on a reviewer's machine: every field has a type, every string and list a bound, and
 * no field the suite does not write is kept (a nested payload has nowhere to hide).
 */

/** Largest session file read, in bytes: 50,000 exchanges of the recorder's kept sizes fit well under it. */
export const maxSessionBytes = 100 * 1024 * 1024;
/** Exchanges a session holds at most (the recorder's default cap). */
export const maxSessionExchanges = 50_000;
/** Exchanges from outside the run (`outside: true`) a stage keeps at most, on top of its own cap. */
export const maxOutsideExchanges = 1000;

const text = (max: number) => z.string().max(max);
const ms = z
  .number()
  .finite()
  .min(0)
  .max(400 * 86_400_000);
const count = z.number().int().min(0).max(1e9);
/** Headers an exchange keeps at most, of the request and of the answer. */
export const maxRecordedHeaders = 16;
const headers = z
  .record(text(40), text(1_000))
  .refine((value) => Object.keys(value).length <= maxRecordedHeaders, {
    message: `more than ${maxRecordedHeaders} headers`,
  });

const scenarioName = z.enum(['revocation', 'throttle', 'unavailable', 'narrowed-grant']);

const stage = z.strictObject({
  authUrl: text(300),
  baseUrl: text(300),
  tokenUrl: text(320),
  audience: text(300),
  partnerId: text(200),
  authorizedScopes: z.array(text(100)).max(16),
  ttlSeconds: z.number().int().min(1).max(86_400),
  longTtlSeconds: z
    .number()
    .int()
    .min(1)
    .max(10 * 365 * 86_400),
  shortPhaseMs: ms,
  tokenDelayMs: ms,
  apiDelayMs: ms,
});

const scenario = z.strictObject({
  name: scenarioName,
  enabled: z.boolean(),
  plan: text(1_000),
  firedAt: ms.optional(),
  seq: count.optional(),
});

const journey = z.strictObject({
  command: z.array(text(4_000)).max(256),
  exitCode: z.number().int().min(-1).max(255).nullable(),
  signal: text(20).nullable(),
  durationMs: ms,
  ending: z.enum(['exited', 'timeout', 'interrupted', 'duration', 'spawn-failed']),
  note: text(1_000).optional(),
  // The journey's own record of what it left behind (children outside its process group).
  survivors: z.array(text(300)).max(64).optional(),
});

const issuedToken = z.strictObject({
  ref: text(16),
  seq: count,
  issuedAt: ms,
  expAt: z
    .number()
    .finite()
    .min(-400 * 86_400_000)
    .max(20 * 365 * 86_400_000),
  expiresIn: z
    .number()
    .finite()
    .min(0)
    .max(20 * 365 * 86_400),
  scope: z.array(text(100)).max(16),
  partnerId: text(200),
  last6: text(6),
  revokedAt: ms.optional(),
  phase: z.enum(['short', 'long']),
});

const exchange = z.strictObject({
  seq: count,
  server: z.enum(['auth', 'api']),
  at: ms,
  end: ms,
  method: text(20),
  target: text(2_000),
  requestHeaders: headers,
  bearer: z
    .strictObject({
      scheme: text(40),
      wellFormed: z.boolean(),
      token: text(16).optional(),
      unknownToken: z.boolean().optional(),
    })
    .optional(),
  body: z.strictObject({
    bytes: count,
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    kind: z.enum(['none', 'json-object', 'json-other', 'invalid-json', 'form', 'other']),
    text: text(2_000).optional(),
  }),
  form: z
    .strictObject({
      grantType: text(200).optional(),
      scope: text(1_000).optional(),
      audience: text(1_000).optional(),
      resource: z.array(text(1_000)).max(16),
      clientAuth: z.enum(['body', 'basic', 'both', 'none']),
      clientIdMatches: z.boolean(),
      secretMatches: z.boolean(),
      repeated: z.array(text(100)).max(32),
    })
    .optional(),
  leaks: z
    .array(
      z.enum([
        'secret-in-url',
        'secret-in-api-header',
        'secret-in-api-body',
        'token-in-url',
        'token-in-body',
        'client-id-in-url',
      ]),
    )
    .max(8),
  status: z.number().int().min(0).max(999),
  responseHeaders: headers,
  responseBody: text(2_000),
  error: text(64).optional(),
  injected: z.enum(['revoked', 'throttled', 'unavailable']).optional(),
  issued: text(16).optional(),
  outside: z.literal(true).optional(),
});

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
const plan = z.strictObject({
  id: text(64),
  digest: sha256Hex,
  operations: z.array(z.strictObject({ operationId: text(64), scope: text(100) })).max(16),
  scopes: z.array(text(100)).max(16),
  scenarios: z.array(scenarioName).max(8),
  ttlSeconds: z.number().int().min(1).max(86_400),
  longTtlSeconds: z.number().int().min(1).max(86_400),
  renewal: z.boolean(),
  decisiveShouldChecks: z.array(text(100)).max(64),
  // Absent in sessions of plans that predate it (partner-lending-default-v1).
  handledBy: z
    .partialRecord(z.enum([...scenarioName.options, 'renewal']), z.array(text(100)).min(1).max(8))
    .optional(),
});

export const sessionSchema = z.strictObject({
  kind: z.literal('partner-conformance-client-session'),
  sessionVersion: z.literal(2),
  tool: z.strictObject({ name: text(100), version: text(50) }),
  startedAt: z.iso.datetime(),
  durationMs: ms,
  stage,
  scenarios: z.array(scenario).max(8),
  journey,
  exchanges: z.array(exchange).max(maxSessionExchanges + maxOutsideExchanges),
  tokens: z.array(issuedToken).max(maxSessionExchanges),
  maxExchanges: z.number().int().min(1).max(maxSessionExchanges),
  dropped: count,
  // Values the recorder shortened to these bounds (each marked "…[N chars]" or "…[N items]").
  clamped: count.optional(),
  integration: z.strictObject({ name: text(200).optional(), version: text(200).optional() }).optional(),
  partner: z.strictObject({ id: text(200), name: text(200) }).optional(),
  plan: plan.optional(),
  service: z.strictObject({ url: text(300), version: text(50) }).optional(),
  outsideDropped: count.optional(),
});
