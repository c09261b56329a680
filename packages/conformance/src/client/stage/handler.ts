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

/**
 * The stage's request handler: answers a request as the scenario plan says (the mock answers the rest),
 * and records the exchange, redacted, in the ledger. `target` is the request's path and query relative
 * to the server's root (a hosted stage strips its run prefix). An error of the stage's own is answered
 * 502 and recorded, never hidden.
 */
export function createStageHandler(context: StageHandlerContext) {
  const { client, redactor, ledger, mock, budget, since } = context;
  const redactText = (text: string) => redactor.redact(text);
  // Values, headers and an empty body's leaks need no token lookup: one reader serves them all.
  const { keptValue, keptHeaders, leaksOf } = requestReader(client, redactor, { byValue: () => undefined });

  async function record(exchange: RecordedExchange): Promise<void> {
    await ledger.record(exchange);
  }

  async function handle(
    server: StageServer,
    req: IncomingMessage,
    res: ServerResponse,
    target: string,
  ): Promise<void> {
    const number = await ledger.nextSeq();
    const at = since();
    const method = req.method ?? '';
    const read = await readBody(req, budget);
    const base: ExchangeBase = {
      seq: number,
      server,
      at,
      method,
      target: cut(keptValue(target)),
      requestHeaders: keptHeaders(req.headers),
    };
    if (read === 'too-large' || read === 'over-budget') {
      // Over 1 MiB: 413 from the API (400 from the token endpoint, RFC 6749 §5.2); the stage's budget
      // of bodies held at once spent (many large bodies at once): 503, try again.
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
        end: since(),
        body: { bytes: read === 'too-large' ? maxBodyBytes + 1 : 0, kind: 'other' },
        leaks: leaksOf(server, target, req.headers, ''),
        status,
        responseHeaders: { 'content-type': 'application/json' },
        responseBody: answer,
        error: read === 'over-budget' ? 'temporarily_unavailable' : 'invalid_request',
      };
      if (context.recordBeforeAnswer) await record(exchange);
      await send(res, status, { 'content-type': 'application/json', connection: 'close' }, answer);
      if (!context.recordBeforeAnswer) await record(exchange);
      return;
    }
    try {
      await respond(server, req, res, target, read.body, number, at, base);
    } finally {
      read.release();
    }
  }

  async function respond(
    server: StageServer,
    req: IncomingMessage,
    res: ServerResponse,
    target: string,
    body: Buffer,
    number: number,
    at: number,
    base: ExchangeBase,
  ): Promise<void> {
    const method = req.method ?? '';
    const text = body.toString('utf8');
    // The issued tokens this request may carry, looked up once: its bearer and the JWT-shaped runs of its body.
    const bearerValue = bearerPattern.exec(req.headers.authorization ?? '')?.[2];
    const candidates = [...(server === 'api' ? (text.match(jwtCandidates) ?? []) : [])];
    if (bearerValue) candidates.push(bearerValue);
    const known: Map<string, IssuedToken> =
      candidates.length > 0 ? await ledger.tokensByValue(candidates) : new Map();
    const reader = requestReader(client, redactor, { byValue: (value) => known.get(value) });
    const kind = bodyKindOf(body, req.headers['content-type']);
    const exchange: RecordedExchange = {
      ...base,
      end: 0,
      body: {
        bytes: body.length,
        ...(body.length > 0 && { sha256: createHash('sha256').update(body).digest('hex') }),
        kind,
        ...(body.length > 0 && { text: cut(keptValue(text.slice(0, keptText * 4))) }),
      },
      leaks: reader.leaksOf(server, target, req.headers, text),
      status: 0,
      responseHeaders: {},
      responseBody: '',
    };
    const path = target.split('?')[0]!;
    let answer: StageAnswer;
    if (server === 'auth') {
      let forwarded = body;
      let refused: StageAnswer | undefined;
      if (path === '/oauth/token' && method === 'POST') {
        exchange.form = reader.tokenFormOf(text, req.headers);
        // Without the run's secret (or a leak of it) the request is not the journey's: kept apart, and
        // it plays no scenario step (an outsider cannot use up the narrowed grant).
        if (!exchange.form.secretMatches && exchange.leaks.length === 0) exchange.outside = true;
        else {
          // The narrowed grant is exercised the first time the journey asks for more than it is granted;
          // with every scope authorised, that request is granted fewer scopes than it asked for.
          const narrowed = await ledger.tokenRequested(
            (exchange.form.scope ?? '').split(' ').filter(Boolean),
            at,
            number,
          );
          if (Array.isArray(narrowed))
            if (narrowed.length === 0) refused = narrowedRefusal();
            else forwarded = withScope(text, narrowed);
        }
      }
      if (path === '/oauth/token') mock.setTokenTtl(context.ttlNow());
      answer = refused ?? (await dispatchBuffered('auth', req, target, forwarded, mock));
      if (path === '/oauth/token' && answer.status === 200) {
        const draft = context.draftOf(answer.body, exchange.seq);
        if (draft) exchange.issued = (await ledger.issue(draft)).ref;
      }
      if (context.tokenDelayMs > 0 && path === '/oauth/token')
        await new Promise((r) => setTimeout(r, context.tokenDelayMs));
    } else {
      if (context.apiDelayMs > 0) await new Promise((r) => setTimeout(r, context.apiDelayMs));
      const bearer = reader.bearerOf(req.headers.authorization);
      if (bearer) exchange.bearer = bearer;
      const issued = bearer?.wellFormed && bearerValue ? known.get(bearerValue) : undefined;
      // No token this run issued and none of its credentials anywhere: not the journey's call.
      if (bearer?.token === undefined && exchange.leaks.length === 0) exchange.outside = true;
      const injected = exchange.outside
        ? undefined
        : await ledger.play(method, path, issued, since(), at, number);
      if (injected) {
        exchange.injected = injected;
        answer = injectedAnswer(injected);
      } else {
        answer = context.recordBeforeAnswer
          ? await dispatchBuffered('api', req, target, body, mock)
          : await dispatch(req, res, target, body, mock);
        if (!exchange.outside)
          await ledger.apiAnswered(answer.status, answer.headers['www-authenticate'], at, number);
      }
    }
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
    if (context.recordBeforeAnswer) {
      exchange.end = since();
      await record(exchange);
      if (!res.headersSent) await send(res, answer.status, answer.headers, answer.body);
      return;
    }
    if (!res.headersSent) await send(res, answer.status, answer.headers, answer.body);
    exchange.end = since();
    await record(exchange);
  }

  /** Serves a request; never rejects (an error of the stage's own is answered 502 and recorded). */
  return (server: StageServer, req: IncomingMessage, res: ServerResponse, target = req.url ?? '/') =>
    handle(server, req, res, target).catch(async (error: unknown) => {
      const refusal = ledger.refusal?.(error);
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
      const message = error instanceof Error ? error.message : String(error);
      try {
        await record({
          seq: await ledger.nextSeq(),
          server,
          at: since(),
          end: since(),
          method: req.method ?? '',
          target: cut(keptValue(target)),
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
    });
}
