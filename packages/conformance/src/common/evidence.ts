/** One exchange a check judged, as a report shows it: secrets and tokens redacted, bodies cut. */
export interface Evidence {
  method: string;
  url: string;
  /** The request headers that matter (authorization, content-type), redacted. */
  requestHeaders: Record<string, string>;
  /** The request body, redacted and cut to 300 characters. */
  requestBody?: string;
  status: number;
  /** The response headers that matter (content-type, www-authenticate, cache-control, location). */
  responseHeaders: Record<string, string>;
  /** The response body, redacted and cut to 300 characters. */
  responseBody: string;
  /** Client mode: when the request arrived, in ms since the session started. */
  at?: number;
  /** Client mode: the scenario step the stage played on this exchange. */
  note?: string;
}

/** How many exchanges a check result carries at most; the rest are counted in `evidenceOmitted`. */
export const maxEvidence = 12;
