import { describe, expect, it } from 'vitest';
import { allowedBy, parseAllowRule } from '../src/oidc/oidc.js';

describe('--oidc-allow rules', () => {
  it('reads CLAIM=VALUE (the value may hold "=") and refuses what is not one', () => {
    expect(parseAllowRule('groups=cert-reviewers')).toEqual({ claim: 'groups', value: 'cert-reviewers' });
    expect(parseAllowRule('realm_access.roles=a=b')).toEqual({ claim: 'realm_access.roles', value: 'a=b' });
    for (const bad of [
      'groups',
      '=x',
      'groups=',
      'gr oups=x',
      `${'c'.repeat(101)}=x`,
      `g=${'v'.repeat(201)}`,
    ])
      expect(() => parseAllowRule(bad), bad).toThrow(/--oidc-allow takes CLAIM=VALUE/);
  });

  it('matches a string claim, a list holding the value, a dotted path; nothing else', () => {
    const rules = [parseAllowRule('groups=cert-reviewers')];
    expect(allowedBy({ groups: ['staff', 'cert-reviewers'] }, rules)).toEqual(rules[0]);
    expect(allowedBy({ groups: 'cert-reviewers' }, rules)).toEqual(rules[0]);
    // The controls: a near value, another claim, a list of objects, no claim.
    expect(allowedBy({ groups: ['cert-reviewers-old', 'Cert-Reviewers'] }, rules)).toBeUndefined();
    expect(allowedBy({ roles: ['cert-reviewers'] }, rules)).toBeUndefined();
    expect(allowedBy({ groups: [{ name: 'cert-reviewers' }] }, rules)).toBeUndefined();
    expect(allowedBy({}, rules)).toBeUndefined();
    const nested = [parseAllowRule('realm_access.roles=cert-reviewer')];
    expect(allowedBy({ realm_access: { roles: ['cert-reviewer'] } }, nested)).toEqual(nested[0]);
    expect(allowedBy({ realm_access: ['cert-reviewer'] }, nested)).toBeUndefined();
    expect(allowedBy({ 'realm_access.roles': 'x', realm_access: 'cert-reviewer' }, nested)).toBeUndefined();
  });

  it('email_domain needs a verified address at exactly that domain', () => {
    const rules = [parseAllowRule('email_domain=vendor.example')];
    expect(allowedBy({ email: 'Ann@Vendor.Example', email_verified: true }, rules)).toEqual(rules[0]);
    expect(allowedBy({ email: 'ann@vendor.example', email_verified: false }, rules)).toBeUndefined();
    expect(allowedBy({ email: 'ann@vendor.example', email_verified: 'true' }, rules)).toBeUndefined();
    expect(allowedBy({ email: 'ann@vendor.example' }, rules)).toBeUndefined();
    expect(allowedBy({ email: 'ann@evil-vendor.example', email_verified: true }, rules)).toBeUndefined();
    expect(allowedBy({ email: 'ann@vendor.example.evil', email_verified: true }, rules)).toBeUndefined();
  });

  it('any rule allows', () => {
    const rules = [parseAllowRule('groups=a'), parseAllowRule('roles=b')];
    expect(allowedBy({ roles: ['b'] }, rules)).toEqual(rules[1]);
    expect(allowedBy({ groups: ['b'], roles: ['a'] }, rules)).toBeUndefined();
  });
});
