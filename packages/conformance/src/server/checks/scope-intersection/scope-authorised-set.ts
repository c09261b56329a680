import { isScope, scopes } from '@partner-lending/spec';
import { formatScopes, sameSet } from '../../../common/scope-set.js';
import { defineCheck, judge } from '../../check.js';

/**
 * Learns the authorised set A by asking for all four scopes; compares it with `--expect-scopes` (what the
 * partner console says). Also reports what a request without scope gives.
 */
export default defineCheck({
  id: 'scope-authorised-set',
  title: 'Asking for every scope grants exactly the authorised set',
  category: 'scope-intersection',
  severity: 'must',
  reference: 'API documentation §4.1 rules 1–2, §5.5',
  citation:
    'Partner Lending API — Authentication and Access §5.5: "Tokens are limited to the scopes authorised for the partner."',
  precondition:
    'the preflight got a token (the run cannot start without one); compared with --expect-scopes when given',
  records: 'the preflight answer (A) and the request without scope',
  fix: "grant exactly the scopes the partner console authorises: compare the granted set with the client's registration",
  async run(context) {
    const granted = context.authorised;
    const problems: string[] = [];
    const ask = context.allScopesAsk;
    if (ask && !ask.accessToken) {
      context.cite(ask.exchange);
      problems.push(
        `asking for every scope (${formatScopes(scopes)}) was refused: ${context.describe(ask.exchange)}; expected a token with the intersection of the requested and the authorised scopes (API documentation §2.2, §4.1 rules 1–2)`,
        ...context.preflightNotes,
      );
    }
    const unknown = granted.filter((scope) => !isScope(scope));
    if (unknown.length > 0)
      problems.push(`granted scopes the spec does not declare: ${formatScopes(unknown)}`);
    const expected = context.settings.expectScopes;
    if (expected !== undefined && !sameSet(expected, granted))
      problems.push(
        `asked for ${formatScopes(scopes)}: expected the authorised ${formatScopes(expected)}, got ${formatScopes(granted)}`,
      );
    const omitted = await context.tokenFor(undefined);
    const notes = [
      omitted.accessToken
        ? `no scope requested: granted ${formatScopes(omitted.granted ?? [])}`
        : `no scope requested: ${context.describe(omitted.exchange)}`,
    ];
    return judge(problems, notes, [
      `A = ${formatScopes(granted)}${expected === undefined ? ' (not compared: no --expect-scopes)' : ''}`,
    ]);
  },
});
