import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type Logger, type requestLineFields, requestLogger } from './logger.js';

/** A request line: only the fields `requestLogger` may write unredacted. */
type RequestLine = Partial<Record<(typeof requestLineFields)[number], unknown>>;

import {
  apiRequests,
  areaOf,
  type StageKind,
  stageAddedLatency,
  stageDuration,
  stageKind,
  stageRequests,
} from './metrics.js';
import { tracer } from './tracing.js';

const stagePath = /^\/runs\/([A-Za-z0-9_-]{1,64})\/(auth|api)(\/.*)?$/s;
const apiRunPath = /^\/api\/runs\/([A-Za-z0-9_-]{1,64})(?:\/|$)/;
/** A request id a proxy in front may send (kept when it looks like one; a new one otherwise). */
const requestIdShape = /^[A-Za-z0-9._:-]{8,128}$/;

/** What the handlers learned of a request that the observer records (the authenticated partner). */
const learned = new WeakMap<IncomingMessage, { partnerId?: string }>();

/** Tells the observer which partner a request was authenticated as. */
export function notePartner(req: IncomingMessage | undefined, partnerId: string | undefined): void {
  if (req && partnerId) learned.set(req, { ...learned.get(req), partnerId });
}

export interface RequestObserverOptions {
  /** Where one JSON line per request goes; none when absent. */
  logger?: Logger;
  /** This instance's stage delays (ms), taken off a stage call's duration to give the added latency. */
  tokenDelayMs: number;
  apiDelayMs: number;
  /**
   * The run and partner behind a stage address or a run id (read once, then kept), for the log lines
   * and spans of stage calls: a stage's address is a capability, never logged whole.
   */
  runOf(segment: string, via: 'stage' | 'api'): Promise<{ runId: string; partnerId: string } | undefined>;
}

/**
 * Wraps the server's request handler: every request gets an id (`x-request-id`, answered back), a
 * server span (child of an incoming `traceparent`), its metrics, and one log line once answered. Never
 * a header value, a query string or a body: they may hold a client secret or a token.
 */
export function requestObserver(options: RequestObserverOptions) {
  const runs = new Map<string, { runId: string; partnerId: string }>();
  const requestLog = options.logger && requestLogger(options.logger);
  async function runOf(
    segment: string,
    via: 'stage' | 'api',
  ): Promise<{ runId: string; partnerId: string } | undefined> {
    const key = `${via}:${segment}`;
    const known = runs.get(key);
    if (known) return known;
    const found = await options.runOf(segment, via).catch(() => undefined);
    if (found) {
      if (runs.size >= 10_000) runs.delete(runs.keys().next().value!);
      runs.set(key, found);
    }
    return found;
  }

  return (
    req: IncomingMessage,
    res: ServerResponse,
    handle: (req: IncomingMessage, res: ServerResponse) => void,
  ) => {
    const started = performance.now();
    const incomingId = req.headers['x-request-id'];
    const requestId =
      typeof incomingId === 'string' && requestIdShape.test(incomingId) ? incomingId : randomUUID();
    res.setHeader('x-request-id', requestId);
    const fullPath = (req.url ?? '/').split('?')[0]!;
    const stage = stagePath.exec(fullPath);
    // A stage's address is the run's capability: its first characters only in a span or a log line.
    const path = stage ? fullPath.replace(stage[1]!, `${stage[1]!.slice(0, 6)}…`) : fullPath;
    const kind: StageKind | undefined = stage
      ? stageKind(stage[2] as 'auth' | 'api', stage[3] ?? '/')
      : undefined;
    const area = stage ? undefined : areaOf(path);
    const apiRunId = stage ? undefined : apiRunPath.exec(path)?.[1];
    const method = (req.method ?? 'GET').slice(0, 16);
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(
      kind ? `stage ${kind}` : `${method} ${area}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          'url.path': path.slice(0, 200),
          'request.id': requestId,
          ...(apiRunId && { 'certification.run.id': apiRunId }),
        },
      },
      parent,
    );
    res.once('close', () => {
      const seconds = (performance.now() - started) / 1000;
      const code = String(res.statusCode);
      const aborted = !res.writableFinished;
      if (kind) {
        stageRequests.inc({ kind, code });
        stageDuration.observe({ kind }, seconds);
        const delay = kind === 'token' ? options.tokenDelayMs : kind === 'api' ? options.apiDelayMs : 0;
        stageAddedLatency.observe({ kind }, Math.max(0, seconds - delay / 1000));
      } else apiRequests.inc({ area: area!, code });
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500 || aborted)
        span.setStatus({ code: SpanStatusCode.ERROR, ...(aborted && { message: 'answer cut' }) });
      const partnerId = learned.get(req)?.partnerId;
      if (partnerId) span.setAttribute('certification.partner.id', partnerId);
      const segment = stage?.[1] ?? apiRunId;
      const write = (runId: string | undefined, partner: string | undefined) => {
        if (stage && runId) span.setAttribute('certification.run.id', runId);
        span.end();
        if (requestLog) log(requestLog, runId, partner);
      };
      const log = (logger: Logger, runId: string | undefined, partner: string | undefined) =>
        logger[res.statusCode >= 500 || aborted ? 'warn' : 'info'](
          {
            event: 'request',
            requestId,
            ...(span.isRecording() && { traceId: span.spanContext().traceId }),
            method,
            path: path.slice(0, 200),
            status: res.statusCode,
            ...(aborted && { aborted: true }),
            durationMs: Math.round(seconds * 10_000) / 10,
            ...(kind && { stage: kind }),
            ...(runId && { runId }),
            ...(partner && { partnerId: partner }),
          } satisfies RequestLine,
          `${method} ${path.slice(0, 200)} ${res.statusCode}`,
        );
      if (!segment || (partnerId && !stage)) write(apiRunId, partnerId);
      else
        void runOf(segment, stage ? 'stage' : 'api').then((found) =>
          write(found?.runId ?? apiRunId, partnerId ?? found?.partnerId),
        );
    });
    context.with(trace.setSpan(parent, span), () => handle(req, res));
  };
}
