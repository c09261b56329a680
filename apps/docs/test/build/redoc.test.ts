import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  RedocBundleError,
  redocOptions,
  referenceScript,
  referenceSpec,
  vendorRedocBundle,
} from '../../src/build/redoc.js';

const require = createRequire(import.meta.url);

describe('vendorRedocBundle', () => {
  it('leaves no address of another origin that the browser would load in the installed bundle', async () => {
    const source = await readFile(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
    expect(source).toContain('https://cdn.redoc.ly/redoc/logo-mini.svg');
    const vendored = vendorRedocBundle(source);
    expect(vendored).not.toContain('cdn.redoc.ly');
    expect(vendored).not.toMatch(/fonts\.(googleapis|gstatic)\.com/);
    expect(vendored).not.toContain('sourceMappingURL=redoc.standalone.js.map');
  });

  it('fails loudly when a rewrite no longer matches (e.g. after a Redoc upgrade)', () => {
    expect(() => vendorRedocBundle('//# sourceMappingURL=redoc.standalone.js.map')).toThrow(
      new RedocBundleError(
        'redoc.standalone.js contains "\\"https://cdn.redoc.ly/redoc/logo-mini.svg\\"" 0 times, expected once (the sidebar footer logo is fetched from cdn.redoc.ly); check the rewrite in src/build/redoc.ts against the installed redoc version.',
      ),
    );
  });
});

describe('referenceScript', () => {
  it('initialises Redoc with the local spec and system fonts', () => {
    const script = referenceScript('assets/openapi.reference.json');
    expect(script).toContain('Redoc.init("assets/openapi.reference.json",');
    expect(redocOptions.downloadUrls).toEqual([{ title: 'openapi.json', url: 'openapi.json' }]);
    expect(redocOptions.theme.typography.fontFamily).toMatch(/^system-ui/);
    expect(script).not.toMatch(/https?:\/\//);
  });
});

describe('referenceSpec', () => {
  it('replaces server URLs that are a bare variable by its default, at every level, without touching the input', () => {
    const spec = {
      servers: [{ url: '{base_url}', variables: { base_url: { default: 'https://api.example' } } }],
      paths: {
        '/oauth/token': {
          post: {
            servers: [{ url: '{auth_url}', variables: { auth_url: { default: 'https://auth.example' } } }],
          },
        },
        '/x': {
          get: { servers: [{ url: 'https://{host}/v1', variables: { host: { default: 'h.example' } } }] },
        },
      },
    };
    const copy = referenceSpec(spec);
    expect(copy.servers[0]?.url).toBe('https://api.example');
    expect(copy.paths['/oauth/token'].post.servers[0]?.url).toBe('https://auth.example');
    expect(copy.paths['/x'].get.servers[0]?.url).toBe('https://{host}/v1'); // Redoc expands this one itself
    expect(spec.servers[0]?.url).toBe('{base_url}');
  });
});
