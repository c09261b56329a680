export { GuideError, type GuideSource, loadGuides, parseGuide } from './guides.js';
export { type FenceLanguage, fenceLanguages, typeCheckedLanguages } from './languages.js';
export { contentSecurityPolicy, type NavEntry, siteTitle } from './layout.js';
export { createMarkdownRenderer, type Heading, type InternalLink, slugify } from './markdown.js';
export { redocOptions, vendorRedocBundle } from './redoc.js';
export { type BuildOptions, type BuildResult, buildSite, packageRoot, SiteBuildError } from './site.js';
export {
  extractSnippets,
  FenceError,
  noTypecheckFlag,
  runFlag,
  runnableSnippets,
  type Snippet,
  typeCheckedSnippets,
} from './snippets.js';
export { type StaticServer, startStaticServer } from './static-server.js';
