import { describe, expect, it } from 'vitest';
import { formatHtmlReport } from '../../src/reporters/html.js';
import { report, target } from './fixture.js';

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
    for (const check of report.checks) {
      expect(html).toContain(`<tr id="${check.id}">`);
      expect(html).toContain(check.reference);
      expect(html).toContain(`class="status ${check.status}">${check.status}<`);
    }
    expect(html).toContain('<span class="verdict fail">FAIL</span>');
  });

  it('escapes details', () => {
    expect(html).toContain('got &lt;none&gt; &amp; &quot;x&quot;');
  });
});
