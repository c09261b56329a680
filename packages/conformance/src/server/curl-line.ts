import type { Redactor } from '../common/redact.js';
import type { ProbeRequest } from './http/probe.js';

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

/** What a curl line needs to fetch a token of its own instead of showing one. */
export interface Reproduction {
  tokenUrl: string;
  audience: string;
  /** The tokens the token endpoint issued in this run, with the scopes each was asked for. */
  issued: ReadonlyMap<string, readonly string[] | undefined>;
}

/** The `TOKEN=$(curl …)` step: the same token request, credentials from the environment. */
export function tokenStep(reproduction: Reproduction, scopes: readonly string[] | undefined): string {
  const form: [string, string][] = [
    ['grant_type', 'client_credentials'],
    ['client_id', '$PARTNER_CLIENT_ID'],
    ['client_secret', '$PARTNER_CLIENT_SECRET'],
    ['audience', reproduction.audience],
  ];
  if (scopes !== undefined) form.push(['scope', scopes.join(' ')]);
  const data = form.map(([name, value]) => `--data-urlencode ${shellQuote(`${name}=${value}`)}`).join(' ');
  return `TOKEN=$(curl -s -X POST ${shellQuote(reproduction.tokenUrl)} ${data} | sed -E 's/.*"access_token" *: *"([^"]+)".*/\\1/')`;
}

/**
 * A curl command that repeats `request`, with every secret replaced by its environment variable
 * (`$PARTNER_CLIENT_SECRET`). With `reproduction`, an issued token becomes `$TOKEN`, fetched by a
 * `TOKEN=$(curl …)` step on the line before; any other token (a forged one) is shortened to its last
 * 6 characters, with a note.
 */
export function curlLine(request: ProbeRequest, redactor: Redactor, reproduction?: Reproduction): string {
  let used: { token: string; scopes: readonly string[] | undefined } | undefined;
  const redact = (text: string) => {
    let out = text;
    for (const [token, scopes] of reproduction?.issued ?? []) {
      if (!out.includes(token) && !out.includes(encodeURIComponent(token))) continue;
      used ??= { token, scopes };
      if (used.token === token) out = out.split(token).join('$TOKEN');
    }
    return redactor.redact(out);
  };
  const line = curlCommand(request, redact);
  const forged = /…[\w-]{6}/.test(line)
    ? ' # a token shown as …xxxxxx is forged from a valid one; the check title says how it differs'
    : '';
  return used && reproduction
    ? `${tokenStep(reproduction, used.scopes)}\n${line}${forged}`
    : `${line}${forged}`;
}

function curlCommand(request: ProbeRequest, redact: (text: string) => string): string {
  const redactor = { redact };
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
