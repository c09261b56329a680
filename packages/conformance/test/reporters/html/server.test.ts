import { describe, expect, it } from 'vitest';
import { formatHtmlReport } from '../../../src/reporters/html/server.js';
import { report, target } from '../fixture.js';

describe('formatHtmlReport', () => {
  const html = formatHtmlReport(report, target);

  it('is self-contained: no external asset of any kind', () => {
    expect(html).not.toMatch(/<(script|link|img|iframe)\b/i);
    expect(html).not.toMatch(/\b(src|href)=/i);
    expect(html).not.toMatch(/url\(|@import/i);
  });

  it('states tool version, target, profile, date and every check with its rule and result', () => {
    expect(html).toContain('@partner-lending/conformance 0.1.0');
    expect(html).toContain('embedded mock (deployed)');
    expect(html).toContain('typ JWT, aud array, scope array, token_type bearer');
    expect(html).toContain('2026-11-21T16:00:00.000Z');
    expect(html).toContain(`<dt>Spec SHA-256</dt><dd><code>${'ab'.repeat(32)}</code></dd>`);
    for (const check of report.checks) {
      expect(html).toContain(`<section class="check ${check.status}" id="${check.id}">`);
      expect(html).toContain(check.reference);
      // Human output says "not verified" where the JSON says skipped.
      expect(html).toContain(
        `class="status ${check.status}">${check.status === 'skipped' ? 'not verified' : check.status}<`,
      );
    }
    expect(html).toContain(
      '<span class="verdict fail">FAIL</span> 1 must check failed or errored: token-no-store; 1 must check not verified: integrity-expired',
    );
  });

  it('puts failures first, then not-verified checks, then the passed ones', () => {
    const at = (id: string) => html.indexOf(`id="${id}"`);
    expect(at('token-no-store')).toBeLessThan(at('bearer-body-token'));
    expect(at('bearer-body-token')).toBeLessThan(at('integrity-expired'));
    expect(at('integrity-expired')).toBeLessThan(at('scope-order'));
    expect(html.indexOf('<h2>Failed or errored (2)</h2>')).toBeLessThan(
      html.indexOf('<h2>Not verified (1)</h2>'),
    );
    expect(html.indexOf('<h2>Not verified (1)</h2>')).toBeLessThan(html.indexOf('<h2>Passed (1)</h2>'));
  });

  it('shows the cited sentence, the precondition and the evidence in a collapsible block', () => {
    expect(html).toContain(
      '<blockquote>RFC 6749 §5.1: &quot;The authorization server MUST include …&quot;</blockquote>',
    );
    expect(html).toContain('<strong>Precondition</strong> the preflight got a token');
    expect(html).toMatch(
      /<details><summary>Evidence: 3 exchanges<\/summary>\n<pre class="exchange">POST http:\/\/127\.0\.0\.1:1\/oauth\/token\n/,
    );
    expect(html).toContain('… and 2 more exchanges.');
    expect(html).not.toMatch(/seed/i);
  });

  it('escapes details', () => {
    expect(html).toContain('got &lt;none&gt; &amp; &quot;x&quot;');
  });
});
