/** Filled paths by template and partner id (the common case): filled once. */
const filledPaths = new Map<string, string>();
/**
 * Fills `{name}` path parameters (simple style, percent-encoded, as openapi-fetch's default does for
 * a string), remembering up to 1,000 filled paths.
 */
export function fillPath(path: string, params: Record<string, unknown> | undefined): string {
  if (params === undefined) return path;
  const partnerId = params.partner_id;
  const cacheable = typeof partnerId === 'string' && Object.keys(params).length === 1;
  const key = cacheable ? `${path}\0${partnerId}` : '';
  if (cacheable) {
    const hit = filledPaths.get(key);
    if (hit !== undefined) return hit;
  }
  const filled = path.replace(/\{([^{}]+)\}/g, (match, name: string) => {
    const value = params[name];
    return value === undefined || value === null ? match : encodeURIComponent(String(value));
  });
  if (cacheable && filledPaths.size < 1_000) filledPaths.set(key, filled);
  return filled;
}
