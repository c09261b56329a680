import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { deriveOperationMap, OperationMapError } from '../scripts/operation-map.mjs';
import {
  apiOperationIds,
  expandPath,
  isScope,
  matchPath,
  operations,
  scopeFor,
  scopes,
} from '../src/index.js';

const specText = await readFile(new URL('../openapi.yaml', import.meta.url), 'utf8');
const loadSpec = () => parse(specText);

describe('operation map', () => {
  it('has the token endpoint and the four v3 paths with the documented scopes (API documentation §4.2)', () => {
    expect(operations).toEqual({
      requestToken: { method: 'POST', path: '/oauth/token', server: 'auth', scope: null },
      listLoans: {
        method: 'GET',
        path: '/v3/partner/{partner_id}/loans',
        server: 'api',
        scope: 'read:loans',
      },
      createLoanDraft: {
        method: 'POST',
        path: '/v3/partner/{partner_id}/loan_draft',
        server: 'api',
        scope: 'create:loan_draft',
      },
      createJournalUpdate: {
        method: 'POST',
        path: '/v3/partner/{partner_id}/journals',
        server: 'api',
        scope: 'create:journal_update',
      },
      createRepayment: {
        method: 'POST',
        path: '/v3/partner/{partner_id}/repayments',
        server: 'api',
        scope: 'create:repayment',
      },
    });
    expect(scopes).toEqual(['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment']);
  });

  it('agrees with a fresh derivation from spec/openapi.yaml', () => {
    const derived = deriveOperationMap(loadSpec());
    expect(derived.operations).toEqual(operations);
    expect(derived.scopes).toEqual([...scopes]);
    expect(derived.audience).toBe('{base_url}');
  });

  it('agrees with the bundled dist/operations.json', async () => {
    const bundled = JSON.parse(await readFile(new URL('../dist/operations.json', import.meta.url), 'utf8'));
    expect(bundled.operations).toEqual(operations);
  });

  it('fails when a v3 path lacks a scope', () => {
    const doc = loadSpec();
    doc.paths['/v3/partner/{partner_id}/journals'].post.security = [{ partnerOAuth: [] }];
    expect(() => deriveOperationMap(doc)).toThrow(OperationMapError);
    expect(() => deriveOperationMap(doc)).toThrow(
      'POST /v3/partner/{partner_id}/journals (createJournalUpdate) must name exactly one scope of the partnerOAuth scheme in its security requirement; found [{"partnerOAuth":[]}].',
    );
  });

  it('fails when a v3 path has no security requirement at all', () => {
    const doc = loadSpec();
    delete doc.paths['/v3/partner/{partner_id}/loans'].get.security;
    expect(() => deriveOperationMap(doc)).toThrow(/listLoans\) must name exactly one scope/);
  });

  it('fails when a v3 path names an unknown scope', () => {
    const doc = loadSpec();
    doc.paths['/v3/partner/{partner_id}/repayments'].post.security = [{ partnerOAuth: ['write:everything'] }];
    expect(() => deriveOperationMap(doc)).toThrow(
      'POST /v3/partner/{partner_id}/repayments (createRepayment) requires the unknown scope "write:everything"; declared scopes: read:loans, create:loan_draft, create:journal_update, create:repayment.',
    );
  });

  it('fails when the token endpoint is not `security: []`', () => {
    const doc = loadSpec();
    doc.paths['/oauth/token'].post.security = [{ partnerOAuth: ['read:loans'] }];
    expect(() => deriveOperationMap(doc)).toThrow(
      'POST /oauth/token is on the auth server and must say `security: []`.',
    );
  });

  it('fails when an operation is on neither server', () => {
    const doc = loadSpec();
    doc.paths['/oauth/token'].servers = [{ url: 'https://elsewhere.invalid' }];
    expect(() => deriveOperationMap(doc)).toThrow(/expected '\{auth_url\}'/);
  });
});

describe('helpers', () => {
  it('lists the API operations and their scopes', () => {
    expect(apiOperationIds).toEqual([
      'listLoans',
      'createLoanDraft',
      'createJournalUpdate',
      'createRepayment',
    ]);
    expect(apiOperationIds.map(scopeFor)).toEqual([...scopes]);
    expect(isScope('read:loans')).toBe(true);
    expect(isScope('read:Loans')).toBe(false);
    expect(isScope(undefined)).toBe(false);
  });

  it('matches concrete paths to templates and decodes parameters', () => {
    expect(matchPath('/v3/partner/p%201/loans')).toEqual({
      params: { partner_id: 'p 1' },
      methods: { GET: 'listLoans' },
    });
    expect(matchPath('/oauth/token')).toEqual({ params: {}, methods: { POST: 'requestToken' } });
    expect(matchPath('/v3/partner//loans')).toBeUndefined();
    expect(matchPath('/v3/partner/a/b/loans')).toBeUndefined();
    expect(matchPath('/v3/partner/%E0%A4%A/loans')).toBeUndefined();
    expect(matchPath('/v3/partner/p1/loans/')).toBeUndefined();
  });

  it('expands templates with encoded values', () => {
    expect(expandPath('/v3/partner/{partner_id}/loans', { partner_id: 'a/b c' })).toBe(
      '/v3/partner/a%2Fb%20c/loans',
    );
    expect(() => expandPath('/v3/partner/{partner_id}/loans', {})).toThrow(
      'path parameter partner_id is missing for /v3/partner/{partner_id}/loans',
    );
  });
});
