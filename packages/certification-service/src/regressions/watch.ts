import type { Exchange } from '../evidence/exchange.js';
import type { RegressionFinding } from './finding.js';

/** One partner's new exchanges, handed to judging with the judge's state stored for it (undefined at first). */
export interface EvidenceBatch {
  partnerId: string;
  exchanges: Exchange[];
  state: unknown;
}

/**
 * The evidence side's hand-out: gives each partner's new exchanges to `judge` (one partner at a time,
 * each exchange once across instances), and commits the state `judge` returns with their removal from
 * the queue; when `judge` throws, nothing is committed and the exchanges are handed out again later.
 */
export type ClaimEvidence = (judge: (batch: EvidenceBatch) => Promise<unknown>) => Promise<unknown>;

/** A judge of one partner's production evidence (the production judge's shape). */
export interface PartnerJudge {
  observe(exchanges: Exchange[]): RegressionFinding[];
  state(): unknown;
}

export type CreateJudge = (partnerId: string, options: { state?: unknown }) => PartnerJudge;

export interface RegressionWatchOptions {
  claim: ClaimEvidence;
  createJudge: CreateJudge;
  /** Records a finding as a regression (`recordRegression` bound to the service's policy and key). */
  record: (finding: RegressionFinding) => Promise<unknown>;
  /** The pause between two rounds, in ms. Default 1000. */
  intervalMs?: number;
  log?: (line: string) => void;
}

export interface RegressionWatch {
  /** Runs a round now (after the one running, if any); resolves when it ends. */
  round(): Promise<void>;
  /** Stops: no round starts any more; resolves once the one running has ended. */
  close(): Promise<void>;
}

/**
 * The watch: every `intervalMs`, takes each partner's new exchanges from the evidence side, runs the
 * partner's judge on them from its stored state, records every finding as a regression, and hands the
 * judge's new state back to be committed with them. A finding recorded before a crash and judged again
 * after it is recorded once (a regression is one per partner, check and window). A failing round is
 * logged (once until a round succeeds again) and the next one tries again.
 */
export function startRegressionWatch(options: RegressionWatchOptions): RegressionWatch {
  const intervalMs = options.intervalMs ?? 1000;
  let closed = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failing = false;

  const judge = async (batch: EvidenceBatch): Promise<unknown> => {
    const partnerJudge = options.createJudge(
      batch.partnerId,
      batch.state === undefined || batch.state === null ? {} : { state: batch.state },
    );
    for (const finding of partnerJudge.observe(batch.exchanges)) await options.record(finding);
    return partnerJudge.state();
  };

  const once = async () => {
    try {
      await options.claim(judge);
      if (failing) options.log?.('regression watch: judging production evidence again');
      failing = false;
    } catch (error) {
      if (!failing)
        options.log?.(
          `regression watch: a round failed (${(error as Error).message}); the exchanges are judged again at the next round`,
        );
      failing = true;
    }
  };

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => void round(), intervalMs);
    timer.unref();
  };

  const round = (): Promise<void> => {
    if (closed) return running ?? Promise.resolve();
    clearTimeout(timer);
    const previous = running ?? Promise.resolve();
    const next: Promise<void> = previous.then(once).finally(() => {
      if (running === next) {
        running = undefined;
        schedule();
      }
    });
    running = next;
    return next;
  };

  schedule();
  return {
    round,
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
