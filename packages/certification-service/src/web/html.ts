/** Escapes text for HTML content and double-quoted attributes. */
export function h(value: unknown): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are dropped from every page
  return String(value ?? '').replace(/[&<>"'\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, (char) =>
    char === '&'
      ? '&amp;'
      : char === '<'
        ? '&lt;'
        : char === '>'
          ? '&gt;'
          : char === '"'
            ? '&quot;'
            : char === "'"
              ? '&#39;'
              : '',
  );
}

/** The reviewer UI's style sheet, served from `/ui.css` (the CSP allows no inline style). */
export const stylesheet = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:.6rem 1.5rem;display:flex;gap:1.5rem;align-items:center}
header a{color:#fff}header form{margin-left:auto}main{padding:1rem 1.5rem;max-width:80rem;box-sizing:border-box}
table{border-collapse:collapse;width:100%;background:#fff}th,td{border:1px solid #d0d7de;padding:.35rem .6rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
dl.fields{margin:0;display:grid;grid-template-columns:max-content minmax(0,1fr);gap:0 .6rem}dl.fields dt{color:#57606a}dl.fields dd{margin:0;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
.PASS,.approved{color:#1a7f37;font-weight:700}.FAIL,.rejected{color:#cf222e;font-weight:700}.muted{color:#57606a}
textarea{width:100%;min-height:4rem}button{padding:.3rem .9rem;margin-right:.5rem}.error{color:#cf222e}
code{font-size:90%}`;

/** The CSP of every page of the UI: the style sheet from here, forms to here, nothing else. */
export const uiContentSecurityPolicy =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * True when a form's sender asked for a machine answer (`Accept: application/problem+json` or
 * `application/json`, a script posting the form): its refusals are then RFC 9457 problems, not pages.
 */
export function wantsProblem(c: { req: { header(name: string): string | undefined } }): boolean {
  return /application\/(problem\+)?json/i.test(c.req.header('accept') ?? '');
}

/** A whole page: the title, the signed-in reviewer's bar (with a sign-out form), and the body. */
export function page(title: string, body: string, reviewer?: { name: string; csrf: string }): string {
  const bar = reviewer
    ? `<a href="/ui/partners">Partners</a><a href="/ui/webhooks">Webhooks</a><a href="/ui/audit">Audit log</a><span class="muted">${h(reviewer.name)}</span>
<form method="post" action="/signout"><input type="hidden" name="csrf" value="${h(reviewer.csrf)}"><button>Sign out</button></form>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>${h(title)} · Partner Lending certification</title>
<link rel="stylesheet" href="/ui.css"></head>
<body><header><strong>Partner Lending certification</strong>${bar}</header><main><h1>${h(title)}</h1>
${body}</main></body></html>`;
}

/**
 * A recorded detail (an audit line's JSON) as fields a reader scans: each key with its value, text as
 * text, lists joined, anything deeper as compact JSON — every value escaped and bounded.
 */
export function fields(detail: unknown): string {
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail))
    return detail === null || detail === undefined
      ? ''
      : `<code>${h(JSON.stringify(detail).slice(0, 2000))}</code>`;
  const value = (item: unknown): string => {
    const text =
      typeof item === 'string'
        ? item
        : Array.isArray(item) && item.every((entry) => typeof entry === 'string')
          ? item.join(', ')
          : JSON.stringify(item);
    return h(String(text).slice(0, 2000));
  };
  const entries = Object.entries(detail as Record<string, unknown>).slice(0, 50);
  if (entries.length === 0) return '';
  return `<dl class="fields">${entries.map(([key, item]) => `<dt>${h(key)}</dt><dd>${value(item)}</dd>`).join('')}</dl>`;
}
