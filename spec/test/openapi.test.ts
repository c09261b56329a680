import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const bundled = JSON.parse(await readFile(new URL('../dist/openapi.json', import.meta.url), 'utf8'));

describe('bundled openapi.json', () => {
  it('is OpenAPI 3.1 with the two server variables', () => {
    expect(bundled.openapi).toBe('3.1.0');
    expect(bundled.servers[0].url).toBe('{base_url}');
    expect(bundled.paths['/oauth/token'].servers[0].url).toBe('{auth_url}');
  });

  it('declares the clientCredentials flow with the four scopes and records the audience', () => {
    const scheme = bundled.components.securitySchemes.partnerOAuth;
    expect(scheme.type).toBe('oauth2');
    expect(Object.keys(scheme.flows.clientCredentials.scopes)).toHaveLength(4);
    expect(scheme['x-audience']).toBe('{base_url}');
  });

  it('has every documented field in the token request and response schemas', () => {
    const { TokenRequest, TokenResponse } = bundled.components.schemas;
    expect(Object.keys(TokenRequest.properties).sort()).toEqual(
      ['audience', 'client_id', 'client_secret', 'grant_type', 'scope'].sort(),
    );
    expect(Object.keys(TokenResponse.properties).sort()).toEqual(
      ['access_token', 'expires_in', 'iss', 'jti', 'partnerId', 'scope', 'token_type'].sort(),
    );
  });

  it('documents a Bearer challenge on every 401 and 403 of the partner API', () => {
    for (const [path, item] of Object.entries<Record<string, any>>(bundled.paths)) {
      if (!path.startsWith('/v3/')) continue;
      for (const operation of Object.values<any>(item).filter((value) => value?.responses)) {
        for (const status of ['401', '403']) {
          const response = operation.responses[status];
          const resolved = response.$ref
            ? bundled.components.responses[response.$ref.split('/').pop()]
            : response;
          expect(resolved.headers['WWW-Authenticate'], `${path} ${status}`).toBeDefined();
        }
      }
    }
  });
});
