import { describe, expect, it } from 'vitest';
import { type ClientReport, judgeSession } from '../../src/index.js';
import { ConsoleReporter } from '../../src/reporters/console.js';
import { formatClientHtmlReport } from '../../src/reporters/html/client.js';
import { formatJsonReport } from '../../src/reporters/json.js';
import { formatJunitReport } from '../../src/reporters/junit.js';
import { loans, sessionOf, tokenRequest } from '../client/support/session.js';
import { sink } from '../helpers.js';

// Every report format says whether a verified signature vouches for the session: a session judged
// from a file is "self-recorded, not attested"; only the certification service's signed run (or a
// verified attestation) is attested.

const session = sessionOf(
  [tokenRequest(0, 'T1'), loans(10, 'T1')],
  [{ ref: 'T1', issuedAt: 5, expAt: 4000 }],
);
const digest = 'ab'.repeat(32);
const reports = {
  rejudged: judgeSession(session, {
    provenance: { source: 'rejudged', sessionSha256: digest, sessionFile: '/tmp/session.json' },
  }),
  live: judgeSession(session),
  service: judgeSession(session, { provenance: { source: 'service', sessionSha256: digest } }),
  verified: judgeSession(session, {
    provenance: { source: 'rejudged', sessionSha256: digest, attested: true },
  }),
};

function consoleText(report: ClientReport): string {
  const out = sink(false);
  const reporter = new ConsoleReporter({ stream: out, env: {} });
  for (const result of report.checks) reporter.result(result);
  reporter.finish(report);
  return out.text();
}

const formats: Array<[name: string, render: (report: ClientReport) => string]> = [
  ['console', consoleText],
  ['JSON', formatJsonReport],
  ['JUnit', formatJunitReport],
  ['HTML', (report) => formatClientHtmlReport(report, session)],
];

describe('provenance: attested or not, in every report format', () => {
  it('the JSON field is provenance.attested, false unless a signature vouches for the session', () => {
    const attested = (report: ClientReport) => JSON.parse(formatJsonReport(report)).provenance.attested;
    expect(attested(reports.rejudged)).toBe(false);
    expect(attested(reports.live)).toBe(false);
    expect(attested(reports.service)).toBe(true);
    expect(attested(reports.verified)).toBe(true);
  });

  it.each(formats)('%s: a session judged from a file says "self-recorded, not attested"', (_name, render) => {
    expect(render(reports.rejudged)).toContain('self-recorded, not attested');
  });

  it.each(formats)(
    '%s: a live run on this machine says "recorded by the local stage, not attested", never self-recorded',
    (_name, render) => {
      const text = render(reports.live);
      expect(text).toContain('recorded by the local stage, not attested');
      expect(text).not.toContain('self-recorded');
    },
  );

  it.each(formats)(
    '%s: the certification service\'s signed run and a verified attestation carry no "not attested" mark',
    (_name, render) => {
      for (const report of [reports.service, reports.verified]) {
        const text = render(report);
        expect(text).not.toContain('not attested');
        expect(text).toContain('attested: ');
      }
    },
  );

  it('JUnit carries the mark and the flag as suite properties, for a CI that reads only JUnit', () => {
    const xml = formatJunitReport(reports.rejudged);
    expect(xml).toContain('<property name="attested" value="false"/>');
    expect(xml).toContain('<property name="provenance-mark" value="self-recorded, not attested"/>');
  });
});

describe('a report from a service that predates the flag', () => {
  it('is shown as not attested in every format (only attested: true removes the mark)', () => {
    const { attested: _a, mark: _m, ...older } = reports.service.provenance;
    const report = { ...reports.service, provenance: older } as unknown as ClientReport;
    for (const [name, render] of formats)
      expect(render(report), name).toContain('recorded by the certification service, not attested');
  });
});
