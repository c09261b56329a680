// Redoc's options (https://redocly.com/docs/redoc/config), shared by the reference page's component
// and the tests. Fonts are the system's: nothing is downloaded.
const systemFont =
  'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans", Arial, sans-serif';
const monospaceFont =
  'ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace';

export const redocOptions = {
  // The site's top bar (VitePress's `.VPNav`) stays on screen: Redoc scrolls below it.
  scrollYOffset: '.VPNav',
  expandResponses: '200,201',
  requiredPropsFirst: true,
  jsonSampleExpandLevel: 3,
  hideDownloadButton: false,
  pathInMiddlePanel: true,
  theme: {
    colors: { primary: { main: '#1d4ed8' } },
    typography: {
      fontFamily: systemFont,
      fontSize: '15px',
      headings: { fontFamily: systemFont, fontWeight: '600' },
      code: { fontFamily: monospaceFont },
    },
    sidebar: { width: '260px' },
  },
};

/** Where the build puts Redoc's files, relative to the site's root. */
export const referenceAssets = {
  bundle: 'redoc/redoc.standalone.js',
  /** The copy Redoc displays (see referenceSpec). */
  spec: 'redoc/openapi.reference.json',
  /** The bundled spec, unchanged: Redoc's "Download" button offers it. */
  download: 'openapi.json',
} as const;
