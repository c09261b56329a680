import type { KeyObject } from 'node:crypto';
import type { JourneyRecord, LedgerContents, stageInfoOf } from '@partner-lending/conformance';

/** Everything judging a run needs, as plain data a worker thread receives (the key is cloned). */
export interface JudgeInput {
  id: string;
  runUrl: string;
  stage: Parameters<typeof stageInfoOf>[0];
  startedAtEpoch: number;
  durationMs: number;
  journey: JourneyRecord;
  contents: LedgerContents;
  maxExchanges: number;
  integration: { name?: string; version?: string } | null | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: the names assembleSession takes (partner, service, plan)
  names: any;
  certify: boolean;
  privateKey: KeyObject;
  kid: string;
}

/** What judging stores: the session's exact bytes and digest, both reports, the verdict and the attestation. */
export interface JudgeOutput {
  sessionText: string;
  sessionSha256: string;
  reportJson: string;
  reportHtml: string;
  verdict: string;
  attestation: string;
}

export declare function judgeWork(input: JudgeInput): JudgeOutput;
export default judgeWork;
