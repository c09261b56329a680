import { describe, expect, it } from 'vitest';
import { allowedBy, parseAllowRule } from '../src/oidc/oidc.js';
import { inProcessService } from './support/in-process.js';

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

describe('a provider that cannot be reached', () => {
  it('answers the sign-in link 503 with Retry-After and a page saying so, and logs why', async () => {
    const svc = await inProcessService({
      oidc: {
        issuer: 'http://127.0.0.1:1',
        clientId: 'certification-service',
        clientSecret: 'unreachable-provider-secret',
        allow: [parseAllowRule('groups=cert-reviewers')],
      },
    });
    try {
      const answer = await fetch(`${svc.service.url}/signin/oidc`, { redirect: 'manual' });
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('30');
      expect(answer.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await answer.text()).toContain('cannot be reached just now');
      expect(svc.lines.join('\n')).toMatch(
        /cannot read the OpenID provider's discovery document at http:\/\/127\.0\.0\.1:1\/\.well-known/,
      );
      expect(svc.lines.join('\n')).not.toContain('unreachable-provider-secret');
      // The control: the sign-in page itself still answers, with the provider's link.
      expect(await (await fetch(`${svc.service.url}/signin`)).text()).toContain('href="/signin/oidc"');
    } finally {
      await svc.close();
    }
  });
});
