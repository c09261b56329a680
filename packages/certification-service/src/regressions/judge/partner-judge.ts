import { UsageError } from '../../errors.js';
import type { Exchange } from '../../evidence/exchange.js';
import { judgedInProduction, type ProductionCheckId } from './catalogue.js';
import { onApiCall, onTokenIssue, settleBurst } from './checks.js';
import type { Burst, Context, Recent } from './context.js';
import { Ring, StepWindow, type StepWindowState } from './counters.js';
import { Reorder } from './reorder.js';
import { shortStepMs, type Thresholds } from './thresholds.js';
import { type TokenRecord, TokenRecords } from './tokens.js';

/** A check of the plan failing on production traffic: one per check per episode. */
export interface Finding {
  /** The plan's check id. */
  check: ProductionCheckId;
  partnerId: string;
  /** The exchange that decided it (ms since the epoch, the reporter's clock). */
  at: number;
  /** One line: what broke, with its numbers. */
  detail: string;
  /** The exchanges that broke it, at most 20. */
  exchanges: Exchange[];
  /** The stretch of traffic judged. */
  window: { from: number; to: number };
}

/** Exchanges a finding carries at most. */
export const maxEvidence = 20;

interface Episode {
  /** The last failure of the check; the episode ends `episodeQuietMs` after it. */
  last: number;
}

/** What `state()` returns: JSON, bounded by the thresholds (see the README's "Production checks"). */
export interface JudgeState {
  version: 1;
  partnerId: string;
  held: Exchange[];
  tokens: [string, TokenRecord][];
  moves: number;
  windows: Record<'issues' | 'calls' | 'scopeRefusals' | 'bearerRefusals', StepWindowState> &
    // Absent in states written before the short window: it starts empty.
    Partial<Record<'shortIssues' | 'shortCalls', StepWindowState>>;
  rings: Record<string, Exchange[]>;
  recent: [string, Recent][];
  burst: Burst | null;
  apiCalls: number;
  episodes: Record<string, Episode>;
  judged: number;
  ignored: number;
}

/** One partner's judge: exchanges in (any order within the skew), findings out. */
export class PartnerJudge implements Context {
  readonly tokens: TokenRecords;
  readonly issues: StepWindow;
  readonly calls: StepWindow;
  readonly shortIssues: StepWindow;
  readonly shortCalls: StepWindow;
  readonly scopeRefusals: StepWindow;
  readonly bearerRefusals: StepWindow;
  readonly rings: Record<ProductionCheckId, Ring>;
  readonly recent: Map<string, Recent>;
  burst: Burst | undefined;
  apiCalls: number;
  readonly ownPath: string;
  private readonly reorder: Reorder;
  private readonly episodes: Map<string, Episode>;
  private findings: Finding[] = [];
  /** Exchanges judged, and exchanges of another partner passed over. */
  judged: number;
  ignored: number;

  constructor(
    readonly partnerId: string,
    readonly thresholds: Thresholds,
    state?: JudgeState,
  ) {
    const t = thresholds;
    this.ownPath = `/v3/partner/${encodeURIComponent(partnerId)}/`;
    this.tokens = new TokenRecords(t.maxFingerprints, state?.tokens, state?.moves);
    this.issues = new StepWindow(t.reuseWindowMs, state?.windows.issues);
    this.calls = new StepWindow(t.reuseWindowMs, state?.windows.calls);
    this.shortIssues = new StepWindow(t.reuseShortWindowMs, state?.windows.shortIssues, shortStepMs);
    this.shortCalls = new StepWindow(t.reuseShortWindowMs, state?.windows.shortCalls, shortStepMs);
    this.scopeRefusals = new StepWindow(t.scopeWindowMs, state?.windows.scopeRefusals);
    this.bearerRefusals = new StepWindow(t.bearerWindowMs, state?.windows.bearerRefusals);
    this.rings = Object.fromEntries(
      judgedInProduction.map((check) => [check, new Ring(maxEvidence, state?.rings[check])]),
    ) as Record<ProductionCheckId, Ring>;
    this.recent = new Map(state?.recent);
    this.burst = state?.burst ?? undefined;
    this.apiCalls = state?.apiCalls ?? 0;
    this.episodes = new Map(Object.entries(state?.episodes ?? {}));
    this.judged = state?.judged ?? 0;
    this.ignored = state?.ignored ?? 0;
    this.reorder = new Reorder(t.skewMs, t.maxPending, state?.held);
  }

  observe(exchanges: readonly Exchange[]): Finding[] {
    exchanges.forEach(checkExchange);
    for (const exchange of exchanges) this.reorder.push(exchange);
    this.reorder.release((exchange) => this.judge(exchange));
    const found = this.findings;
    this.findings = [];
    return found;
  }

  private judge(exchange: Exchange): void {
    if (exchange.partnerId !== this.partnerId) {
      this.ignored += 1;
      return;
    }
    this.judged += 1;
    settleBurst(this, exchange);
    if (exchange.kind === 'token') {
      if (exchange.status === 200 && exchange.fingerprint !== undefined)
        onTokenIssue(this, exchange, exchange.fingerprint);
    } else onApiCall(this, exchange);
  }

  violation(
    check: ProductionCheckId,
    exchange: Exchange,
    from: number,
    detail: () => string,
    evidence: () => readonly Exchange[],
  ): void {
    const episode = this.episodes.get(check);
    if (episode && exchange.at - episode.last < this.thresholds.episodeQuietMs) {
      episode.last = Math.max(episode.last, exchange.at);
      return;
    }
    this.episodes.set(check, { last: exchange.at });
    const exchanges = [...new Set([...evidence(), exchange])].slice(-maxEvidence);
    this.findings.push({
      check,
      partnerId: this.partnerId,
      at: exchange.at,
      detail: detail(),
      exchanges,
      window: { from: Math.min(from, exchange.at), to: exchange.at },
    });
  }

  state(): JudgeState {
    return {
      version: 1,
      partnerId: this.partnerId,
      held: this.reorder.held(),
      tokens: this.tokens.state(),
      moves: this.tokens.moved,
      windows: {
        issues: this.issues.state(),
        calls: this.calls.state(),
        shortIssues: this.shortIssues.state(),
        shortCalls: this.shortCalls.state(),
        scopeRefusals: this.scopeRefusals.state(),
        bearerRefusals: this.bearerRefusals.state(),
      },
      rings: Object.fromEntries(judgedInProduction.map((check) => [check, this.rings[check].list()])),
      recent: [...this.recent].map(([key, value]) => [
        key,
        { times: [...value.times], fingerprints: [...value.fingerprints] },
      ]),
      burst: this.burst ?? null,
      apiCalls: this.apiCalls,
      episodes: Object.fromEntries([...this.episodes].map(([key, value]) => [key, { ...value }])),
      judged: this.judged,
      ignored: this.ignored,
    };
  }
}

function checkExchange(exchange: Exchange, index: number): void {
  const fail = (what: string) => {
    throw new UsageError(
      `observe: exchange ${index} ${what}; expected an Exchange of src/evidence/exchange.ts ({at: ms since the epoch, partnerId, kind: "token" | "api", method, path, status, …}). Nothing of this batch was judged: fix or drop it and pass the batch again`,
    );
  };
  if (exchange === null || typeof exchange !== 'object')
    fail(`is ${exchange === null ? 'null' : typeof exchange}`);
  if (typeof exchange.at !== 'number' || !Number.isFinite(exchange.at)) fail(`has at ${String(exchange.at)}`);
  if (exchange.kind !== 'token' && exchange.kind !== 'api')
    fail(`has kind ${JSON.stringify(exchange.kind)?.slice(0, 40)}`);
  if (typeof exchange.partnerId !== 'string') fail('has no partnerId');
  if (typeof exchange.path !== 'string') fail('has no path');
}

/** Reads a state `state()` wrote; a clear error when it is something else. */
export function readState(state: unknown, partnerId: string): JudgeState {
  const value = state as Partial<JudgeState> | null;
  if (value === null || typeof value !== 'object' || value.version !== 1 || !Array.isArray(value.held))
    throw new UsageError(
      'createPartnerJudge: options.state is not a state this judge wrote (expected the value of state(), version 1, as JSON.parse gives it back); pass it unchanged, or leave it out to start afresh',
    );
  if (value.partnerId !== partnerId)
    throw new UsageError(
      `createPartnerJudge: options.state is partner ${JSON.stringify(value.partnerId)}'s, not ${JSON.stringify(partnerId)}'s: each partner resumes from its own state`,
    );
  return value as JudgeState;
}
