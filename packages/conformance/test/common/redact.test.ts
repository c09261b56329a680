import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Redactor, Secret, shorten } from '../../src/common/redact.js';

const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXZhbHVlLTEyMzQ1Ng';

describe('Redactor', () => {
  it('replaces a secret raw and URL-encoded by its placeholder', () => {
    const redactor = new Redactor();
    redactor.addSecret('s3cr3t/+=value', '$PARTNER_CLIENT_SECRET');
    expect(redactor.redact('a s3cr3t/+=value b s3cr3t%2F%2B%3Dvalue')).toBe(
      'a $PARTNER_CLIENT_SECRET b $PARTNER_CLIENT_SECRET',
    );
  });

  it('shortens every JWT-shaped string to its last 6 characters', () => {
    expect(new Redactor().redact(`Bearer ${jwt} and ${jwt.split('.').slice(0, 2).join('.')}.`)).toBe(
      'Bearer …MzQ1Ng and …J4In0.',
    );
    expect(shorten('abcdefghij')).toBe('…efghij');
    // A token cut to header.payload (a malformed value built from a real token) is shortened too.
    expect(new Redactor().redact(`Bearer ${jwt.split('.').slice(0, 2).join('.')}'`)).toBe("Bearer …iJ4In0'");
  });

  it('shortens registered opaque tokens', () => {
    const redactor = new Redactor();
    redactor.addToken('opaque-token-0123456789');
    expect(redactor.redact('token opaque-token-0123456789!')).toBe('token …456789!');
  });

  it('finds a secret percent-encoded in any mix, hex in either case, a space as +', () => {
    const redactor = new Redactor();
    redactor.addSecret('pass wörd%ok', '[secret]');
    // w, ö (two UTF-8 bytes) and the literal % encoded; the space as '+'; hex upper and lower.
    expect(redactor.redact('a=pass+%77%C3%b6rd%25ok&b=pass%20w%c3%B6rd%ok')).toBe('a=[secret]&b=[secret]');
    // One byte of ö missing: not the secret.
    expect(redactor.redact('pass+w%C3rd%ok')).toBe('pass+w%C3rd%ok');
  });

  it('tries a literal % first and its encoding %25 next, as a regular expression of the two would', () => {
    const redactor = new Redactor();
    redactor.addSecret(`${'%'.repeat(40)}x`, '[secret]');
    // The first 20 literal, the next 20 encoded: at each '%25' the literal '%' is tried, then undone.
    expect(redactor.redact(`${'%'.repeat(20)}${'%25'.repeat(20)}x`)).toBe('[secret]');
    const near = `${'%25'.repeat(40)}y`;
    expect(redactor.redact(near)).toBe(near);
  });
});

describe('Secret', () => {
  it('stays out of JSON, inspect and string conversion', () => {
    const secret = new Secret('hunter2-secret');
    expect(JSON.stringify({ secret })).toBe('{"secret":"[redacted]"}');
    expect(inspect({ secret })).not.toContain('hunter2');
    expect(`${secret}`).toBe('[redacted]');
    expect(secret.reveal()).toBe('hunter2-secret');
  });
});
