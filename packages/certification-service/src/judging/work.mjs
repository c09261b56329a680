// The CPU-heavy part of judging a hosted run, as one pure function of a recorded session: assemble the
// session, judge it, render its JSON and HTML reports and sign its attestation. It is plain JavaScript
// (typed by work.d.mts) so that a worker thread loads the very same file from the sources and from the
// build; the service runs it on its judging threads (see pool.ts), or in-thread when asked to.
import { createHash } from 'node:crypto';
import {
  assembleSession,
  formatClientHtmlReport,
  formatJsonReport,
  formatSession,
  judgeSession,
  reportVerdict,
  signEnvelope,
  stageInfoOf,
  testResultStatement,
} from '@partner-lending/conformance';

/** @param {import('./work.d.mts').JudgeInput} input @returns {import('./work.d.mts').JudgeOutput} */
export function judgeWork(input) {
  const session = assembleSession({
    stage: stageInfoOf(input.stage),
    startedAtEpoch: input.startedAtEpoch,
    durationMs: input.durationMs,
    journey: input.journey,
    contents: input.contents,
    maxExchanges: input.maxExchanges,
    integration: input.integration ?? undefined,
    names: input.names,
    redact: (text) => text,
  });
  const sessionText = formatSession(session);
  const sessionSha256 = createHash('sha256').update(sessionText).digest('hex');
  const judged = judgeSession(session, {
    certify: input.certify,
    provenance: { source: 'service', sessionSha256 },
  });
  const report = { ...judged, run: { id: input.id, url: input.runUrl } };
  const statement = testResultStatement({
    sessionBytes: sessionText,
    report,
    sessionName: `${input.id}.session.json`,
    url: input.runUrl,
  });
  const envelope = signEnvelope(Buffer.from(JSON.stringify(statement)), input.privateKey, input.kid);
  return {
    sessionText,
    sessionSha256,
    reportJson: formatJsonReport(report),
    reportHtml: formatClientHtmlReport(report, session),
    verdict: reportVerdict(report).word,
    attestation: `${JSON.stringify(envelope, null, 2)}\n`,
  };
}

/** A judging thread's task (piscina calls the default export). */
export default judgeWork;
