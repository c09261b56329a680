import type { Context } from 'hono';
import { problem } from '../web/problem.js';

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * The methods each path of the OpenAPI document answers, for the 405 of a known path asked with
 * another method (RFC 9110 §15.5.6: the answer carries `Allow`). GET allows HEAD.
 */
export function allowedMethods(paths: Record<string, Record<string, unknown>>) {
  const routes = Object.entries(paths).map(([template, item]) => {
    const pattern = new RegExp(
      `^${template
        .split(/\{[^}]+\}/)
        .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
        .join('[^/]+')}$`,
    );
    const allowed = methods.filter((method) => method in item).map((method) => method.toUpperCase());
    if (allowed.includes('GET') && !allowed.includes('HEAD')) allowed.push('HEAD');
    return { pattern, allowed };
  });
  /** The methods `path` answers, or undefined when the document has no such path. */
  return (path: string): string[] | undefined => routes.find((route) => route.pattern.test(path))?.allowed;
}

/** The 405 of a known path asked with a method it does not answer. */
export function methodNotAllowed(c: Context, allowed: string[]) {
  return problem(
    c,
    405,
    'Method not allowed',
    `${c.req.method} is not answered at ${new URL(c.req.url).pathname.slice(0, 200)}: use ${allowed.join(', ')}`,
    {},
    { allow: allowed.join(', ') },
  );
}
