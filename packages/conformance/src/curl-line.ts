import type { ProbeRequest } from './http-probe.js';
import type { Redactor } from './redact.js';

// Placeholders that must stay shell-expandable in a curl line: "$PARTNER_CLIENT_SECRET".
const expandable = /(\$[A-Z_]+)/;

/** Single-quotes `value` for a POSIX shell, leaving `$PARTNER_…` placeholders expandable. */
export function shellQuote(value: string): string {
  return value
    .split(expandable)
    .filter((part) => part.length > 0)
    .map((part) =>
      expandable.test(part) && /^\$[A-Z_]+$/.test(part) ? `"${part}"` : `'${part.replace(/'/g, `'\\''`)}'`,
    )
    .join('');
}

/**
 * A curl command that repeats `request`, with every secret replaced by its environment variable
 * (`$PARTNER_CLIENT_SECRET`) and every token shortened to its last 6 characters.
 */
export function curlLine(request: ProbeRequest, redactor: Redactor): string {
  const parts = ['curl', '-i', '-X', request.method, shellQuote(redactor.redact(request.url))];
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    if (name === 'content-type' && request.form !== undefined) continue;
    const header = redactor.redact(`${name}: ${value}`);
    // A huge header (the 8 KiB malformed token) would drown the report: shown cut, with its length.
    parts.push(
      '-H',
      shellQuote(header.length > 300 ? `${header.slice(0, 80)}…[${header.length} chars]` : header),
    );
  }
  if (request.form !== undefined) {
    for (const [name, value] of request.form)
      parts.push('--data-urlencode', shellQuote(`${name}=${redactor.redact(value)}`));
  } else if (request.json !== undefined) {
    const text = JSON.stringify(request.json);
    parts.push(
      '--data-raw',
      shellQuote(redactor.redact(text.length > 200 ? `${text.slice(0, 200)}…` : text)),
    );
  } else if (request.body !== undefined) {
    const text = request.body;
    parts.push(
      '--data-raw',
      shellQuote(redactor.redact(text.length > 200 ? `${text.slice(0, 200)}…` : text)),
    );
  }
  return parts.join(' ');
}
