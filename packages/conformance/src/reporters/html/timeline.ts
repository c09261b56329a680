import type { ClientSession, RecordedExchange } from '../../client/session.js';
import { htmlEscape } from './page.js';

/** Marks drawn at most per row of the timeline; past it calls are sampled evenly (the report says so). */
export const maxTimelineMarks = 2000;
/** Width of a 10-px monospace character in the SVG's units, with room to spare (labels must not touch). */
const labelCharWidth = 6.5;
/** Token rows drawn at most; the rest are summarised. */
export const maxTimelineTokens = 40;

const colorOf = (exchange: RecordedExchange) => {
  if (exchange.injected) return '#8250df';
  if (exchange.status >= 200 && exchange.status < 300) return '#1a7f37';
  if (exchange.status === 401) return '#cf222e';
  if (exchange.status === 403) return '#bc4c00';
  return '#57606a';
};

function sample<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  const step = items.length / max;
  return Array.from({ length: max }, (_, index) => items[Math.floor(index * step)]!);
}

/**
 * The session as a picture: one bar per token (issued → exp, red from a revocation), the token requests,
 * the API calls coloured by answer, and the scenario steps. Inline SVG: the report stays one file.
 */
export function timelineSvg(session: ClientSession): string {
  const width = 1000;
  const left = 170;
  const plot = width - left - 10;
  // The axis is the session's: a token that outlives it (a long-phase token) is drawn to the edge.
  const end = Math.max(1, Number(session.durationMs) || 0);
  const x = (ms: number) => (left + (Math.max(0, Math.min(Number(ms) || 0, end)) / end) * plot).toFixed(1);
  const tokens = session.tokens.slice(0, maxTimelineTokens);
  const row = 18;
  // Scenario labels on as many rows as they need so that none overlaps another (10-px text).
  const fired = session.scenarios
    .filter((scenario) => scenario.firedAt !== undefined)
    .sort((a, b) => (a.firedAt ?? 0) - (b.firedAt ?? 0));
  const labelRows: number[] = [];
  const placed = fired.map((scenario) => {
    const at = Number(x(scenario.firedAt!));
    const textWidth = scenario.name.length * labelCharWidth + 4;
    // Labels near the right edge are drawn to the left of their line.
    const from = at + textWidth > width ? at - textWidth : at;
    let level = labelRows.findIndex((rightEdge) => rightEdge <= from);
    if (level < 0) level = labelRows.length;
    labelRows[level] = from + textWidth + 2;
    return { scenario, at, from, level };
  });
  const top = 14 + Math.max(1, labelRows.length) * 12;
  const parts: string[] = [];
  const label = (y: number, text: string) =>
    `<text x="4" y="${y + 12}" font-size="11" font-family="ui-monospace,monospace">${htmlEscape(text)}</text>`;
  tokens.forEach((token, index) => {
    const y = top + index * row;
    parts.push(label(y, `${token.ref} …${token.last6}`));
    const until = token.revokedAt ?? token.expAt;
    parts.push(
      `<rect x="${x(token.issuedAt)}" y="${y + 3}" width="${Math.max(1, Number(x(until)) - Number(x(token.issuedAt))).toFixed(1)}" height="10" fill="#54aeff"><title>${htmlEscape(`${token.ref}: issued ${(token.issuedAt / 1000).toFixed(2)} s, exp ${(token.expAt / 1000).toFixed(2)} s, scope ${token.scope.join(' ')}`)}</title></rect>`,
    );
    if (token.revokedAt !== undefined)
      parts.push(
        `<rect x="${x(token.revokedAt)}" y="${y + 3}" width="${Math.max(1, Number(x(token.expAt)) - Number(x(token.revokedAt))).toFixed(1)}" height="10" fill="#cf222e" opacity="0.6"><title>revoked at ${(token.revokedAt / 1000).toFixed(2)} s</title></rect>`,
      );
  });
  let y = top + tokens.length * row;
  if (session.tokens.length > tokens.length) {
    parts.push(label(y, `+${session.tokens.length - tokens.length} more tokens`));
    y += row;
  }
  const auth = session.exchanges.filter((e) => e.server === 'auth');
  const api = session.exchanges.filter((e) => e.server === 'api');
  parts.push(label(y, `token requests (${auth.length})`));
  for (const exchange of sample(auth, maxTimelineMarks))
    parts.push(
      `<circle cx="${x(exchange.at)}" cy="${y + 8}" r="3.5" fill="${colorOf(exchange)}"><title>${htmlEscape(`#${exchange.seq} ${exchange.method} ${exchange.target} → ${exchange.status} at ${(exchange.at / 1000).toFixed(3)} s`)}</title></circle>`,
    );
  y += row;
  parts.push(label(y, `API calls (${api.length})`));
  for (const exchange of sample(api, maxTimelineMarks))
    parts.push(
      `<rect x="${x(exchange.at)}" y="${y + 1}" width="2" height="14" fill="${colorOf(exchange)}"><title>${htmlEscape(`#${exchange.seq} ${exchange.method} ${exchange.target} → ${exchange.status}${exchange.injected ? ` (scenario: ${exchange.injected})` : ''} at ${(exchange.at / 1000).toFixed(3)} s`)}</title></rect>`,
    );
  y += row;
  const height = y + 22;
  for (const { scenario, at, from, level } of placed)
    parts.push(
      `<line x1="${at.toFixed(1)}" y1="${3 + level * 12}" x2="${at.toFixed(1)}" y2="${y}" stroke="#8250df" stroke-dasharray="3 3"/><text class="scenario-label" x="${from.toFixed(1)}" y="${11 + level * 12}" font-size="10" font-family="ui-monospace,monospace" fill="#8250df">${htmlEscape(scenario.name)}</text>`,
    );
  for (let second = 0; second <= end / 1000; second += Math.max(1, Math.ceil(end / 1000 / 10)))
    parts.push(
      `<text x="${x(second * 1000)}" y="${height - 6}" font-size="10" fill="#57606a">${second} s</text>`,
    );
  const sampled = api.length > maxTimelineMarks || auth.length > maxTimelineMarks;
  return `<svg class="timeline" viewBox="0 0 ${width} ${height}" role="img" aria-label="Session timeline: tokens, token requests and API calls over time">${parts.join('')}</svg>
<p class="muted">Blue bars: each token from issue to its exp (red from its revocation). Dots: token requests. Ticks: API calls — green 2xx, red 401, orange 403, purple a scenario step, grey other.${sampled ? ` Calls are sampled to ${maxTimelineMarks} marks per row.` : ''}</p>`;
}
