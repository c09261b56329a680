import { UsageError } from '../errors.js';
import type { Exchange } from '../evidence/exchange.js';
import { type Finding, PartnerJudge, readState } from './judge/partner-judge.js';
import { resolveThresholds, type Thresholds } from './judge/thresholds.js';

export {
  judgedInProduction,
  notJudgedInProduction,
  type ProductionCheckId,
} from './judge/catalogue.js';
export { type Finding, type JudgeState, maxEvidence } from './judge/partner-judge.js';
export { defaultThresholds, type Thresholds } from './judge/thresholds.js';

export interface PartnerJudgeOptions {
  /** Laid over `defaultThresholds`. */
  thresholds?: Partial<Thresholds>;
  /** A value `state()` returned (after a JSON round trip or not): the judge resumes where it stopped. */
  state?: unknown;
}

/** One partner's production judge (see createPartnerJudge). */
export interface ProductionJudge {
  /**
   * Judges a batch of the partner's exchanges (any order within `skewMs`; those of other partners are
   * passed over) and returns the findings it raised. Each exchange is judged once: an exchange is held
   * up to `skewMs` for late ones, then judged in time order and never again.
   */
  observe(exchanges: readonly Exchange[]): Finding[];
  /** The judge's state as JSON-serialisable data, bounded by the thresholds. */
  state(): unknown;
}

/**
 * The plan's decisive client checks (and the others the evidence can decide) judged incrementally on
 * one partner's production traffic: counts per minute over sliding windows, a few numbers per token
 * fingerprint (least recently seen dropped past `maxFingerprints`), O(log n) per exchange. A check that
 * keeps failing raises one finding per episode (`episodeQuietMs`).
 */
export function createPartnerJudge(partnerId: string, options: PartnerJudgeOptions = {}): ProductionJudge {
  if (typeof partnerId !== 'string' || partnerId.length === 0)
    throw new UsageError(
      `createPartnerJudge: partnerId must be a non-empty string (the partner.id the evidence carries), got ${JSON.stringify(partnerId)}`,
    );
  const thresholds = resolveThresholds(options.thresholds);
  const state = options.state === undefined ? undefined : readState(options.state, partnerId);
  const judge = new PartnerJudge(partnerId, thresholds, state);
  return {
    observe: (exchanges) => {
      if (!Array.isArray(exchanges))
        throw new UsageError(`observe: expected an array of exchanges, got ${typeof exchanges}`);
      return judge.observe(exchanges);
    },
    state: () => judge.state(),
  };
}
