import { describe, expect, it } from 'vitest';
import { documentedResponses, documentedStatus, operationOf } from '../../src/common/spec-responses.js';

describe('spec-responses (from @partner-lending/spec/openapi.json)', () => {
  it('knows the documented statuses and content types of each operation', () => {
    expect(documentedStatus('listLoans', 200)).toBe('200');
    expect(documentedStatus('listLoans', 500)).toBeUndefined();
    expect(documentedStatus('createLoanDraft', 201)).toBe('2XX');
    expect(documentedStatus('requestToken', 401)).toBe('401');
    expect([...documentedResponses('listLoans').get('200')!]).toEqual(['application/json']);
  });

  it('finds the operation of a request, below a base path too', () => {
    const target = { tokenUrl: 'https://auth.example/oauth/token', baseUrl: 'https://api.example/base/' };
    expect(operationOf('POST', 'https://auth.example/oauth/token', target)).toBe('requestToken');
    expect(operationOf('GET', 'https://api.example/base/v3/partner/p1/loans?limit=1', target)).toBe(
      'listLoans',
    );
    expect(operationOf('POST', 'https://api.example/base/v3/partner/p1/journals', target)).toBe(
      'createJournalUpdate',
    );
    expect(operationOf('GET', 'https://auth.example/.well-known/jwks.json', target)).toBeUndefined();
    expect(operationOf('GET', 'https://api.example/v3/partner/p1/loans', target)).toBeUndefined();
  });
});
