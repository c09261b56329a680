import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { RedocBundleError, redocOptions, referenceScript, vendorRedocBundle } from '../../src/build/redoc.js';

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
    const script = referenceScript('openapi.json');
    expect(script).toContain('Redoc.init("openapi.json",');
    expect(redocOptions.theme.typography.fontFamily).toMatch(/^system-ui/);
    expect(script).not.toMatch(/https?:\/\//);
  });
});
