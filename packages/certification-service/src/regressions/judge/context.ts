import type { Exchange } from '../../evidence/exchange.js';
import type { ProductionCheckId } from './catalogue.js';
import type { Ring, StepWindow } from './counters.js';
import type { Thresholds } from './thresholds.js';
import type { TokenRecords } from './tokens.js';

/** Token issues for one scope set, newest last (at most `burstIssues`). */
export interface Recent {
  times: number[];
  fingerprints: string[];
}

/** A burst of token issues waiting for `burstSettleMs` to show whether its tokens were used again. */
export interface Burst {
  from: number;
  at: number;
  scopes: string;
  fingerprints: string[];
  /** The partner's API calls counted when the burst was seen. */
  callsBefore: number;
  exchanges: Exchange[];
}

/** What the checks read and write: one partner's bounded state. */
export interface Context {
  readonly partnerId: string;
  /** `/v3/partner/<partnerId>/`, the partner's own paths. */
  readonly ownPath: string;
  readonly thresholds: Thresholds;
  readonly tokens: TokenRecords;
  readonly issues: StepWindow;
  readonly calls: StepWindow;
  /** The same counts over `reuseShortWindowMs`, in 5-s steps. */
  readonly shortIssues: StepWindow;
  readonly shortCalls: StepWindow;
  readonly scopeRefusals: StepWindow;
  readonly bearerRefusals: StepWindow;
  readonly rings: Record<ProductionCheckId, Ring>;
  /** By scope set, at most `maxScopeSets`. */
  readonly recent: Map<string, Recent>;
  burst: Burst | undefined;
  /** API calls with a token since the judge began (a counter, never reset). */
  apiCalls: number;
  /**
   * The check failed at `exchange`: a finding when it opens an episode, nothing more while the
   * episode lasts. `detail` is built only for a finding.
   */
  violation(
    check: ProductionCheckId,
    exchange: Exchange,
    from: number,
    detail: () => string,
    evidence: () => readonly Exchange[],
  ): void;
}

/** Scope sets whose recent token issues are kept for single flight (least recently issued dropped). */
export const maxScopeSets = 16;
