import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../src/http/openapi.js';
import { planFields } from '../src/runs/types.js';

// The rule a certification run follows — the vendor's plan, none of the practice fields — is stated
// by the OpenAPI document itself, so that a client generated from it (or a fuzzer) knows it; the
// service refuses the same bodies with its own 400 (certification.test.ts).
describe('RunRequest in /openapi.json', () => {
  const ajv = new Ajv2020({ strict: false });
  const schema = openApiDocument('http://127.0.0.1').components.schemas.RunRequest;
  const valid = ajv.compile(schema);
  const practiceValues = { scenarios: [], scopes: ['read:loans'], ttlSeconds: 3, longTtlSeconds: 600 };

  it.each(planFields)('refuses "certify": true with %s', (field) => {
    expect(valid({ certify: true, [field]: practiceValues[field] })).toBe(false);
  });

  it('takes the same fields on a practice run, and a certification run without them (the controls)', () => {
    for (const field of planFields) {
      expect(valid({ [field]: practiceValues[field] }), field).toBe(true);
      expect(valid({ certify: false, [field]: practiceValues[field] }), field).toBe(true);
    }
    expect(valid({ certify: true, integration: { name: 'acme', version: '1.2.3' } })).toBe(true);
    expect(valid({ certify: true, unknown: 1 })).toBe(false);
  });
});
