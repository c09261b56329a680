import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RunningMock } from '@partner-lending/mock';
import type { Redactor } from '../../common/redact.js';
import type { IssuedToken, RecordedExchange } from '../session.js';
import type { StageLedger } from './ledger.js';
import {
  type ByteBudget,
  bearerPattern,
  bodyKindOf,
  cut,
  jwtCandidates,
  keptText,
  maxBodyBytes,
  readBody,
  requestReader,
} from './request-reader.js';
import { injectedAnswer, type StageAnswer } from './scenarios.js';
import type { TokenDraft } from './tokens.js';
import { dispatch, dispatchBuffered, send } from './transport.js';

/** Which of the stage's two servers a request reached. */
export type StageServer = 'auth' | 'api';

/** What one stage's request handler needs: its client, its mock, its ledger and its clock. */
export interface StageHandlerContext {
  client: { clientId: string; clientSecret: string; partnerId: string };
  redactor: Redactor;
  ledger: StageLedger;
  mock: RunningMock;
  budget: ByteBudget;
  /** Ms since the stage started. */
  since: () => number;
  /** The token lifetime to issue now, in seconds (short phase, then long). */
  ttlNow: () => number;
  tokenDelayMs: number;
  apiDelayMs: number;
  /** Reads a token answer for the record (its value, its record without a reference). */
  draftOf: (body: string, issuedBy: number) => TokenDraft | undefined;
  /**
   * Keep each exchange before its answer leaves (a hosted stage: an answered exchange is never lost,
   * even if the process is killed right after). API answers are then buffered in full. Default false.
   */
  recordBeforeAnswer?: boolean;
}

type ExchangeBase = Omit<
  RecordedExchange,
  'status' | 'responseHeaders' | 'responseBody' | 'end' | 'leaks' | 'body'
>;

const json = (value: unknown) => JSON.stringify(value);

/** A token-request form with its `scope` replaced (the narrowed grant asks the token endpoint for less). */
function withScope(text: string, scopes: readonly string[]): Buffer {
  const form = new URLSearchParams(text);
  form.set('scope', scopes.join(' '));
  return Buffer.from(form.toString());
}

/** The narrowed grant left nothing of what was asked: refused as RFC 6749 §5.2 says. */
const narrowedRefusal = (): StageAnswer => ({
  status: 400,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  body: json({
    error: 'invalid_scope',
    error_description: 'none of the requested scopes is granted to this client for this request',
  }),
});

/** How the stage reads a request for the record (see `requestReader`). */
type Reader = ReturnType<typeof requestReader>;

/** A stage's handler: its context, and the reader for what needs no token lookup. */
interface Stage extends StageHandlerContext {
  /** Values, headers and an empty body's leaks need no token lookup: this one reader serves them all. */
  plain: Reader;
}

/** A request as it arrived: which server, the request and its answer, its target. */
interface Arrival {
  server: StageServer;
  req: IncomingMessage;
  res: ServerResponse;
  target: string;
}

/** A request being served: as it arrived, with its number as the ledger gives it (asked on arrival). */
interface Numbered extends Arrival {
  seq: Promise<number>;
}

/** A request read whole, with the exchange being recorded for it and what it is known to carry. */
interface ReadRequest extends Numbered {
  body: Buffer;
  text: string;
  /** The target without its query. */
  path: string;
  exchange: RecordedExchange;
  /** The reader that knows the issued tokens this request carries. */
  reader: Reader;
  /** The issued tokens this request carries, by value: its bearer and the JWT-shaped runs of its body. */
  known: Map<string, IssuedToken>;
  /** The token of its Authorization header, when it has one. */
  bearerValue: string | undefined;
}

/**
 * The stage's request handler: answers a request as the scenario plan says (the mock answers the rest),
 * and records the exchange, redacted, in the ledger. `target` is the request's path and query relative
 * to the server's root (a hosted stage strips its run prefix). An error of the stage's own is answered
 * 502 and recorded, never hidden.
 */
export function createStageHandler(context: StageHandlerContext) {
  const stage: Stage = {
    ...context,
    plain: requestReader(context.client, context.redactor, { byValue: () => undefined }),
  };
  /** Serves a request; never rejects (an error of the stage's own is answered 502 and recorded). */
  return (server: StageServer, req: IncomingMessage, res: ServerResponse, target = req.url ?? '/') => {
    const arrival: Arrival = { server, req, res, target };
    return handle(stage, arrival).catch((error: unknown) => answerStageError(stage, arrival, error));
  };
}

/**
 * Numbers a request, reads its body within the stage's budget, and answers it (or refuses it unread).
 * The number is asked for on arrival (numbers follow arrival order) and waited for only where it is
 * needed: before a token request is played, after an API call's delay, before the record. A ledger whose
 * numbering is a database's round trip (a hosted stage's) then numbers while the body is read and the
 * API's delay runs, not before.
 */
async function handle(stage: Stage, { server, req, res, target }: Arrival): Promise<void> {
  const seq = stage.ledger.nextSeq();
  // Waited for below; a request that fails before (its body unreadable) leaves its number unused.
  seq.catch(() => {});
  const arrival: Numbered = { server, req, res, target, seq };
  const at = stage.since();
  const method = req.method ?? '';
  const read = await readBody(req, stage.budget);
  const base: ExchangeBase = {
    seq: 0,
    server,
    at,
    method,
    target: cut(stage.plain.keptValue(target)),
    requestHeaders: stage.plain.keptHeaders(req.headers),
  };
  if (read === 'too-large' || read === 'over-budget') {
    await refuseUnread(stage, arrival, base, read);
    return;
  }
  try {
    await respond(stage, arrival, read.body, base);
  } finally {
    read.release();
  }
}

/**
 * A body over 1 MiB: 413 from the API (400 from the token endpoint, RFC 6749 §5.2); the stage's budget
 * of bodies held at once spent (many large bodies at once): 503, try again. Recorded either way.
 */
async function refuseUnread(
  stage: Stage,
  { server, req, res, target, seq }: Numbered,
  base: ExchangeBase,
  read: 'too-large' | 'over-budget',
): Promise<void> {
  const status = read === 'over-budget' ? 503 : server === 'api' ? 413 : 400;
  const answer = json(
    read === 'over-budget'
      ? {
          error: 'temporarily_unavailable',
          error_description: 'the stage holds too many request bodies at once; retry',
        }
      : { error: 'invalid_request', error_description: 'the request body is over 1 MiB' },
  );
  const exchange: RecordedExchange = {
    ...base,
    end: stage.since(),
    body: { bytes: read === 'too-large' ? maxBodyBytes + 1 : 0, kind: 'other' },
    leaks: stage.plain.leaksOf(server, target, req.headers, ''),
    status,
    responseHeaders: { 'content-type': 'application/json' },
    responseBody: answer,
    error: read === 'over-budget' ? 'temporarily_unavailable' : 'invalid_request',
  };
  exchange.seq = await seq;
  if (stage.recordBeforeAnswer) await stage.ledger.record(exchange);
  await send(res, status, { 'content-type': 'application/json', connection: 'close' }, answer);
  if (!stage.recordBeforeAnswer) await stage.ledger.record(exchange);
}

/** Answers a request read whole (the scenario plan first, the mock for the rest) and records it. */
async function respond(stage: Stage, arrival: Numbered, body: Buffer, base: ExchangeBase): Promise<void> {
  const request = await readRequest(stage, arrival, body, base);
  const { exchange, res } = request;
  const answer =
    arrival.server === 'auth' ? await answerAuth(stage, request) : await answerApi(stage, request);
  keepAnswer(stage, exchange, answer);
  if (stage.recordBeforeAnswer) {
    exchange.end = stage.since();
    await stage.ledger.record(exchange);
    if (!res.headersSent) await send(res, answer.status, answer.headers, answer.body);
    return;
  }
  if (!res.headersSent) await send(res, answer.status, answer.headers, answer.body);
  exchange.end = stage.since();
  await stage.ledger.record(exchange);
}

/** A request's exchange as recorded before its answer: its body (digest, kind, kept text) and its leaks. */
async function readRequest(
  stage: Stage,
  arrival: Numbered,
  body: Buffer,
  base: ExchangeBase,
): Promise<ReadRequest> {
  const { server, req, target } = arrival;
  const text = body.toString('utf8');
  // The issued tokens this request may carry, looked up once: its bearer and the JWT-shaped runs of its body.
  const bearerValue = bearerPattern.exec(req.headers.authorization ?? '')?.[2];
  const candidates = [...(server === 'api' ? (text.match(jwtCandidates) ?? []) : [])];
  if (bearerValue) candidates.push(bearerValue);
  const known: Map<string, IssuedToken> =
    candidates.length > 0 ? await stage.ledger.tokensByValue(candidates) : new Map();
  const reader = requestReader(stage.client, stage.redactor, { byValue: (value) => known.get(value) });
  const kind = bodyKindOf(body, req.headers['content-type']);
  const exchange: RecordedExchange = {
    ...base,
    end: 0,
    body: {
      bytes: body.length,
      ...(body.length > 0 && { sha256: createHash('sha256').update(body).digest('hex') }),
      kind,
      ...(body.length > 0 && { text: cut(stage.plain.keptValue(text.slice(0, keptText * 4))) }),
    },
    leaks: reader.leaksOf(server, target, req.headers, text),
    status: 0,
    responseHeaders: {},
    responseBody: '',
  };
  return { ...arrival, body, text, path: target.split('?')[0]!, exchange, reader, known, bearerValue };
}

/**
 * The token endpoint's answer, no sooner than the delay after the request was read: the call's number,
 * the narrowed grant played, the mock's token and its registration (a hosted stage's database round
 * trips) all run while the delay does.
 */
async function answerAuth(stage: Stage, request: ReadRequest): Promise<StageAnswer> {
  const { req, target, path, exchange } = request;
  const delay =
    stage.tokenDelayMs > 0 && path === '/oauth/token'
      ? new Promise((r) => setTimeout(r, stage.tokenDelayMs))
      : undefined;
  exchange.seq = await request.seq;
  const { forwarded, refused } = await playTokenRequest(stage, request);
  if (path === '/oauth/token') stage.mock.setTokenTtl(stage.ttlNow());
  const answer = refused ?? (await dispatchBuffered('auth', req, target, forwarded, stage.mock));
  // The token is registered while the delay runs (a hosted stage stores it in its database), and known
  // before its answer leaves.
  const draft =
    path === '/oauth/token' && answer.status === 200 ? stage.draftOf(answer.body, exchange.seq) : undefined;
  const issuing = draft && stage.ledger.issue(draft);
  issuing?.catch(() => {}); // waited for below, after the delay
  await delay;
  if (issuing) exchange.issued = (await issuing).ref;
  return answer;
}

/**
 * A token request's form recorded and its scenario step played: what goes on to the mock (the body, its
 * scope narrowed), or the refusal when the narrowed grant leaves nothing of what was asked.
 */
async function playTokenRequest(
  stage: Stage,
  { req, path, body, text, exchange, reader }: ReadRequest,
): Promise<{ forwarded: Buffer; refused?: StageAnswer }> {
  if (path !== '/oauth/token' || req.method !== 'POST') return { forwarded: body };
  exchange.form = reader.tokenFormOf(text, req.headers);
  // Without the run's secret (or a leak of it) the request is not the journey's: kept apart, and
  // it plays no scenario step (an outsider cannot use up the narrowed grant).
  if (!exchange.form.secretMatches && exchange.leaks.length === 0) {
    exchange.outside = true;
    return { forwarded: body };
  }
  // The narrowed grant is exercised the first time the journey asks for more than it is granted;
  // with every scope authorised, that request is granted fewer scopes than it asked for.
  const narrowed = await stage.ledger.tokenRequested(
    (exchange.form.scope ?? '').split(' ').filter(Boolean),
    exchange.at,
    exchange.seq,
  );
  if (!Array.isArray(narrowed)) return { forwarded: body };
  return narrowed.length === 0
    ? { forwarded: body, refused: narrowedRefusal() }
    : { forwarded: withScope(text, narrowed) };
}

/** The partner API's answer: after the delay, a scenario step's injected answer or the mock's. */
async function answerApi(stage: Stage, request: ReadRequest): Promise<StageAnswer> {
  const { req, res, target, path, body, exchange, reader, known, bearerValue } = request;
  if (stage.apiDelayMs > 0) await new Promise((r) => setTimeout(r, stage.apiDelayMs));
  exchange.seq = await request.seq;
  const bearer = reader.bearerOf(req.headers.authorization);
  if (bearer) exchange.bearer = bearer;
  const issued = bearer?.wellFormed && bearerValue ? known.get(bearerValue) : undefined;
  // No token this run issued and none of its credentials anywhere: not the journey's call.
  if (bearer?.token === undefined && exchange.leaks.length === 0) exchange.outside = true;
  const injected = exchange.outside
    ? undefined
    : await stage.ledger.play(exchange.method, path, issued, stage.since(), exchange.at, exchange.seq);
  if (injected) {
    exchange.injected = injected;
    return injectedAnswer(injected);
  }
  const answer = stage.recordBeforeAnswer
    ? await dispatchBuffered('api', req, target, body, stage.mock)
    : await dispatch(req, res, target, body, stage.mock);
  if (!exchange.outside)
    await stage.ledger.apiAnswered(
      answer.status,
      answer.headers['www-authenticate'],
      exchange.at,
      exchange.seq,
    );
  return answer;
}

/** What the exchange keeps of its answer: status, the headers judged, the body redacted and cut, its error. */
function keepAnswer(stage: Stage, exchange: RecordedExchange, answer: StageAnswer): void {
  const redactText = stage.plain.redact;
  exchange.status = answer.status;
  for (const name of ['content-type', 'www-authenticate', 'retry-after', 'cache-control'])
    if (answer.headers[name] !== undefined)
      exchange.responseHeaders[name] = cut(redactText(answer.headers[name]!));
  // Redact a window a little wider than what is kept (a secret across the cut is still caught).
  exchange.responseBody = cut(redactText(answer.body.slice(0, keptText * 4)));
  if (answer.body.length > keptText * 4)
    exchange.responseBody = `${exchange.responseBody.slice(0, keptText)}…[${answer.body.length} chars]`;
  const error = /"error"\s*:\s*"([^"]{1,64})"/.exec(answer.body)?.[1];
  if (error) exchange.error = error;
}

/**
 * An error while serving: the ledger's refusal when it has one (its status, as the ledger says), else
 * 502, recorded when the ledger still can.
 */
async function answerStageError(
  stage: Stage,
  { server, req, res, target }: Arrival,
  error: unknown,
): Promise<void> {
  const refusal = stage.ledger.refusal?.(error);
  if (refusal) {
    req.resume();
    if (!res.headersSent)
      await send(
        res,
        refusal.status,
        { 'content-type': 'application/json', ...refusal.headers },
        refusal.body,
      );
    return;
  }
  const redactText = stage.plain.redact;
  const message = error instanceof Error ? error.message : String(error);
  try {
    await stage.ledger.record({
      seq: await stage.ledger.nextSeq(),
      server,
      at: stage.since(),
      end: stage.since(),
      method: req.method ?? '',
      target: cut(stage.plain.keptValue(target)),
      requestHeaders: {},
      body: { bytes: 0, kind: 'none' },
      leaks: [],
      status: 502,
      responseHeaders: {},
      responseBody: cut(redactText(`stage error: ${message}`)),
    });
  } catch {
    // The ledger itself failed (its database is gone): the answer below still says so.
  }
  if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
  if (!res.writableEnded) res.end(json({ error: 'stage_error', error_description: redactText(message) }));
}
