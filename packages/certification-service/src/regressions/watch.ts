import type { Queryable } from '../db/database.js';
import type { Exchange } from '../evidence/exchange.js';
import type { LogLine } from '../observability/logger.js';
import type { RegressionFinding } from './finding.js';
import type { RecordedRegression } from './record.js';

/**
 * One partner's new exchanges as the evidence side hands them to judging (`claimExchanges`'s shape):
 * held by this instance until committed or released.
 */
export interface ClaimedEvidence {
  readonly partnerId: string;
  readonly exchanges: readonly Exchange[];
  /** The judge's state as last committed; undefined before the first commit. */
  readonly state: unknown;
  /** Stores the judge's state and marks the exchanges judged, with `write` in the same transaction. */
  commit(state: unknown, write?: (tx: Queryable) => Promise<void>): Promise<void>;
  /**
   * True when more of the partner's exchanges may be waiting (a full claim). When every claim of a
   * round says false, the next round waits `intervalMs` for exchanges to gather, rather than claiming a
   * handful at a time and taking the database's turns from the evidence being stored.
   */
  readonly backlog?: boolean;
  /** `commit` inside the caller's transaction: the watch's round commits every partner in one. */
  commitIn?(tx: Queryable, state: unknown, write?: (tx: Queryable) => Promise<void>): Promise<void>;
  /** Gives the partner back unjudged: its exchanges are handed out again. */
  release(): Promise<void>;
}

/** Claims partners with exchanges not yet judged (each exchange handed out once across instances). */
export type ClaimEvidence = () => Promise<readonly ClaimedEvidence[]>;

/** A judge of one partner's production evidence (the production judge's shape). */
export interface PartnerJudge {
  observe(exchanges: Exchange[]): RegressionFinding[];
  state(): unknown;
}

export type CreateJudge = (partnerId: string, options: { state?: unknown }) => PartnerJudge;

export interface RegressionWatchOptions {
  claim: ClaimEvidence;
  createJudge: CreateJudge;
  /** Records a finding inside the evidence's commit (`recordRegressionIn` bound to the policy and key). */
  record: (tx: Queryable, finding: RegressionFinding) => Promise<RecordedRegression>;
  /** Once a partner's commit is done: what was recorded (`regressionCommitted`: the metric, the nudge). */
  committed?: (outcomes: readonly RecordedRegression[]) => void;
  /**
   * The database's transaction: when given (and the claims offer `commitIn`), a round commits all its
   * partners in one transaction, each behind a savepoint, instead of one transaction a partner. On the
   * embedded store, where transactions take turns with the evidence being stored, 17 transactions a round
   * (the claim and 16 commits) each waited behind the batches queued meanwhile: judging fell behind.
   */
  transaction?: <T>(work: (tx: Queryable) => Promise<T>) => Promise<T>;
  /** The pause after a round that found nothing to judge (or failed), in ms. Default 1000. */
  intervalMs?: number;
  /** The service's logger: a failed round and the recovery after it, each logged once. */
  log?: LogLine;
}

export interface RegressionWatch {
  /** Runs a round now (after the one running, if any); resolves when it ends. */
  round(): Promise<void>;
  /** Stops: no round starts any more; resolves once the one running has ended. */
  close(): Promise<void>;
}

interface Verdict {
  claimed: ClaimedEvidence;
  state: unknown;
  findings: RegressionFinding[];
}

/** Runs the partner's judge on its claim; throws what went wrong, having given the claim back. */
async function judgeClaim(options: RegressionWatchOptions, claimed: ClaimedEvidence): Promise<Verdict> {
  try {
    const judge = options.createJudge(
      claimed.partnerId,
      claimed.state === undefined || claimed.state === null ? {} : { state: claimed.state },
    );
    const findings = judge.observe([...claimed.exchanges]);
    return { claimed, state: judge.state(), findings };
  } catch (error) {
    await claimed.release().catch(() => undefined);
    throw error;
  }
}

/** What `write` records of a verdict's findings, in the commit's transaction. */
const recorder =
  (options: RegressionWatchOptions, verdict: Verdict, outcomes: RecordedRegression[]) =>
  async (tx: Queryable) => {
    for (const finding of verdict.findings) outcomes.push(await options.record(tx, finding));
  };

/** Commits each verdict in a transaction of its own; how many committed. */
async function commitEach(
  options: RegressionWatchOptions,
  verdicts: readonly Verdict[],
  problems: string[],
): Promise<number> {
  let committed = 0;
  for (const verdict of verdicts) {
    const outcomes: RecordedRegression[] = [];
    try {
      await verdict.claimed.commit(verdict.state, recorder(options, verdict, outcomes));
      options.committed?.(outcomes);
      committed += 1;
    } catch (error) {
      problems.push(`${verdict.claimed.partnerId}: ${(error as Error).message}`);
    }
  }
  return committed;
}

/**
 * Commits every verdict in one transaction, each behind a savepoint: a partner whose commit fails
 * (its lease lost, a finding refused) is rolled back alone and its claim runs out; the others commit.
 * `committed` is told only once the transaction has committed. How many committed.
 */
async function commitTogether(
  options: RegressionWatchOptions,
  transaction: NonNullable<RegressionWatchOptions['transaction']>,
  verdicts: readonly Verdict[],
  problems: string[],
): Promise<number> {
  const done: RecordedRegression[][] = [];
  const failed: string[] = [];
  await transaction(async (tx) => {
    for (const [index, verdict] of verdicts.entries()) {
      const outcomes: RecordedRegression[] = [];
      // Most partners have no finding: their commit is one statement that changes nothing when it
      // fails (a lost lease), so it needs no savepoint. One with findings gets one, so that a finding
      // refused rolls back its partner alone.
      const guarded = verdict.findings.length > 0;
      if (guarded) await tx.query(`SAVEPOINT partner_${index}`);
      try {
        await verdict.claimed.commitIn!(tx, verdict.state, recorder(options, verdict, outcomes));
        if (guarded) await tx.query(`RELEASE SAVEPOINT partner_${index}`);
        done.push(outcomes);
      } catch (error) {
        if (guarded) await tx.query(`ROLLBACK TO SAVEPOINT partner_${index}`);
        failed.push(`${verdict.claimed.partnerId}: ${(error as Error).message}`);
      }
    }
  });
  problems.push(...failed);
  for (const outcomes of done) options.committed?.(outcomes);
  return done.length;
}

/**
 * The watch: takes each partner's new exchanges from the evidence side, runs the partner's judge on
 * them from its committed state, and commits the judge's new state together with every finding
 * recorded as a regression (one transaction: a judgement counts once or not at all). After a round
 * that judged something with more waiting (a full claim) the next starts at once; after an empty,
 * failing or not full one, in `intervalMs`. A
 * judge that throws gives its partner back (judged again later); a failed commit leaves the claim to
 * run out (the same exchanges come back). Failures are logged once until a round succeeds again.
 */
export function startRegressionWatch(options: RegressionWatchOptions): RegressionWatch {
  const intervalMs = options.intervalMs ?? 1000;
  let closed = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failing = false;

  /** One round: true when it judged something and more may be waiting (a full claim, or a claim that does not say). */
  const once = async (): Promise<boolean> => {
    const problems: string[] = [];
    let judged = 0;
    let backlog = false;
    try {
      const verdicts: Verdict[] = [];
      for (const claimed of await options.claim()) {
        backlog ||= claimed.backlog !== false;
        if (closed) {
          await claimed.release().catch(() => undefined);
          continue;
        }
        try {
          verdicts.push(await judgeClaim(options, claimed));
        } catch (error) {
          problems.push(`${claimed.partnerId}: ${(error as Error).message}`);
        }
      }
      const together =
        options.transaction && verdicts.length > 1 && verdicts.every((verdict) => verdict.claimed.commitIn);
      judged = together
        ? await commitTogether(options, options.transaction!, verdicts, problems)
        : await commitEach(options, verdicts, problems);
    } catch (error) {
      problems.push((error as Error).message);
    }
    if (problems.length > 0 && !failing)
      options.log?.(
        `regression watch: a round failed (${problems.join('; ').slice(0, 500)}); those exchanges are judged again later`,
      );
    else if (problems.length === 0 && failing)
      options.log?.('regression watch: judging production evidence again');
    failing = problems.length > 0;
    return judged > 0 && backlog && !failing;
  };

  const schedule = (delayMs: number) => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void round(), delayMs);
    timer.unref();
  };

  const round = (): Promise<void> => {
    if (closed) return running ?? Promise.resolve();
    clearTimeout(timer);
    const next: Promise<void> = (running ?? Promise.resolve()).then(async () => {
      const more = await once();
      if (running === next) {
        running = undefined;
        schedule(more ? 0 : intervalMs);
      }
    });
    running = next;
    return next;
  };

  schedule(intervalMs);
  return {
    round,
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
