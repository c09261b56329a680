import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger } from './logger.js';
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
  /** The partner a run belongs to (read once per run, then kept), for the log lines of stage calls. */
  partnerOf(runId: string): Promise<string | undefined>;
}

/**
 * Wraps the server's request handler: every request gets an id (`x-request-id`, answered back), a
 * server span (child of an incoming `traceparent`), its metrics, and one log line once answered. Never
 * a header value, a query string or a body: they may hold a client secret or a token.
 */
export function requestObserver(options: RequestObserverOptions) {
  const partners = new Map<string, string>();
  async function partnerOfRun(runId: string): Promise<string | undefined> {
    const known = partners.get(runId);
    if (known) return known;
    const found = await options.partnerOf(runId).catch(() => undefined);
    if (found) {
      if (partners.size >= 10_000) partners.delete(partners.keys().next().value!);
      partners.set(runId, found);
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
    const path = (req.url ?? '/').split('?')[0]!;
    const stage = stagePath.exec(path);
    const kind: StageKind | undefined = stage
      ? stageKind(stage[2] as 'auth' | 'api', stage[3] ?? '/')
      : undefined;
    const area = stage ? undefined : areaOf(path);
    const runId = stage?.[1] ?? apiRunPath.exec(path)?.[1];
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
          ...(runId && { 'certification.run.id': runId }),
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
      span.end();
      const { logger } = options;
      if (!logger) return;
      const write = (partner: string | undefined) =>
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
          },
          `${method} ${path.slice(0, 200)} ${res.statusCode}`,
        );
      if (partnerId || !runId) write(partnerId);
      else void partnerOfRun(runId).then(write);
    });
    context.with(trace.setSpan(parent, span), () => handle(req, res));
  };
}
