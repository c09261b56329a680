import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { defaultApiDelayMs, defaultTokenDelayMs } from '@partner-lending/conformance';
import type { Hono } from 'hono';
import type { Database } from '../db/database.js';
import { StorageUnavailableError, unavailableRetrySeconds } from '../errors.js';
import type { Logger, LogLine } from '../observability/logger.js';
import { requestObserver } from '../observability/requests.js';
import type { Runs } from '../runs/runs.js';
import type { ApiGate } from './fairness.js';

const stagePath = /^\/runs\/([A-Za-z0-9_-]{1,64})\/(auth|api)(\/.*)?$/s;

/** A request URL for a run's stage: its address, which side, and the rest (its query kept); else undefined. */
export function stageRoute(url: string): { address: string; side: 'auth' | 'api'; rest: string } | undefined {
  const at = url.indexOf('?');
  const match = stagePath.exec(at === -1 ? url : url.slice(0, at));
  if (!match) return undefined;
  return {
    address: match[1]!,
    side: match[2] as 'auth' | 'api',
    rest: `${match[3] ?? '/'}${at === -1 ? '' : url.slice(at)}`,
  };
}

/**
 * The HTTP server's request listener: every request observed (its log line, metrics and trace); a
 * partner's API request its share refuses answered at once; a call to a run's stage served by the
 * stage; everything else by the app.
 */
export function requestHandler(deps: {
  // biome-ignore lint/suspicious/noExplicitAny: the app every part mounts on (see serviceApp)
  app: Hono<any>;
  db: Database;
  runs: Runs;
  gate: ApiGate;
  log: LogLine;
  logger?: Logger | undefined;
  tokenDelayMs?: number | undefined;
  apiDelayMs?: number | undefined;
}): (req: IncomingMessage, res: ServerResponse) => void {
  const { db, runs, gate, log, logger } = deps;
  const listener = getRequestListener(deps.app.fetch);
  const observe = requestObserver({
    ...(logger && { logger }),
    tokenDelayMs: deps.tokenDelayMs ?? defaultTokenDelayMs,
    apiDelayMs: deps.apiDelayMs ?? defaultApiDelayMs,
    runOf: async (segment, via) => {
      const held = via === 'stage' ? runs.heldAt(segment) : undefined;
      if (held) return held;
      const [run] = await db.query<{ id: string; partner_id: string }>(
        via === 'stage'
          ? 'SELECT id, partner_id FROM runs WHERE address = $1 OR (address IS NULL AND id = $1)'
          : 'SELECT id, partner_id FROM runs WHERE id = $1',
        [segment],
        { prepare: true },
      );
      return run ? { runId: run.id, partnerId: run.partner_id } : undefined;
    },
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    // A partner's request refused by its share is answered here, before any routing or body.
    if (path.startsWith('/api/') && gate.screen(req, res, path)) return;
    const stage = stageRoute(req.url ?? '/');
    if (stage) {
      runs.serveStage(stage.address, stage.side, req, res, stage.rest).catch((error: unknown) => {
        // The address is the run's capability: only its first characters go to the log.
        log(`stage error on run address ${stage.address.slice(0, 7)}…: ${(error as Error).message}`);
        if (!res.headersSent)
          res.writeHead(503, {
            'content-type': 'application/json',
            'retry-after': String(error instanceof StorageUnavailableError ? unavailableRetrySeconds : 1),
          });
        if (!res.writableEnded)
          res.end(
            JSON.stringify({
              error: 'temporarily_unavailable',
              error_description: 'the certification service could not serve this call; retry',
            }),
          );
      });
      return;
    }
    void listener(req, res);
  };
  return (req, res) => observe(req, res, handle);
}
