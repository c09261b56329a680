/** The command's help text (`--help`), and how a usage error ends the command. */

export const usage = `Usage:
  partner-certification-service serve [--host H] [--port N] [--public-url URL] [--data-dir DIR] [--plan FILE] [--trust-forwarded-for]
  partner-certification-service admin add-partner --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-reviewer --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-register-reader --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-evidence-reporter --name NAME [--json] [--data-dir DIR]
  partner-certification-service admin add-webhook --url URL [--events E,…] [--json] [--data-dir DIR]

serve
  --host H           interface to listen on (default 127.0.0.1; 0.0.0.0 behind a proxy or in a container)
  --port N           port (default 8080; 0 for a random one)
  --public-url URL   the URL partners and reviewers use, e.g. https://certify.example.com behind a TLS proxy
                     (default http://HOST:PORT); run addresses and report links are made from it
  --data-dir DIR     the embedded database and a generated signing key (default ./certification-data)
  --journal-dir DIR  with PostgreSQL (DATABASE_URL): this instance serves the database alone, and answers a
                     call once it is written to a journal file in DIR, filled into the database in the
                     background and replayed at the next start after a crash; put DIR on a disk that
                     outlives the process. Start refused while other instances serve the database, and
                     theirs while this one does (default: none; instances share the database, and each call
                     waits for PostgreSQL's commit). The embedded database always keeps one in DATA_DIR/journal
  --idle-timeout S   a run that receives nothing for S seconds is judged (default 600)
  --max-run-duration S  a run is judged at the latest S seconds after it was created (default 3600)
  --max-open-runs N  open runs per partner at once (default 5)
  --max-runs-per-hour N  runs a partner may create per hour (default 60)
  --approval-valid-days N  an approval for production is valid N days (default 365)
  --expiry-notice-days N   an approval expiring within N days is announced (approval.expiring) (default 30)
  --register-max-age S     the register's Cache-Control max-age, seconds (default 60)
  --webhook-retry-schedule S,…  seconds before each retry of a failed webhook delivery, e.g. 5,15,15,15
                     (1 to 30 delays of 1 to 604800 s, each varied ±20 %; after the last the delivery is failed)
                     (default 5,30,120,600,1800,3600,10800,21600,43200,86400,86400,86400: about 4 days)
  --on-regression P  what a regression (a decisive plan check failing on a partner's production evidence)
                     does besides being recorded, signed and announced (partner.regressed): notify, nothing
                     more; suspend, an active partner is suspended (register status suspended, no scopes;
                     partner.suspended) until a reviewer approves a certification run again
                     (partner.reinstated) or revokes (default notify)
  --trust-forwarded-for  a reviewer's sign-in address is the last X-Forwarded-For entry (behind a proxy that
                     sets it), not the socket's; failed sign-ins are limited per address (default off)
  --retain-days N    purge the sessions, reports, attestations and exchanges of runs ended N days ago that
                     no decision rests on (their digests stay in the audit log) (default: keep everything)
  --evidence-retention-days N  delete production evidence (POST /evidence: exchanges and batch ids)
                     received more than N days ago, judged or not (default 30)
  --shutdown-delay S  on SIGTERM, keep accepting and serving S seconds while /readyz answers 503, so a load
                     balancer takes the instance out of its pool before it stops listening; behind one, at
                     least its health-check interval times its unhealthy threshold (0 to 300; default 0)
  --no-warm-up       ready at once: without the start-up warm-up, which before /readyz answers 200 drives a
                     throwaway run's stage in the process (about 1000 calls; then deleted, nothing of it kept)
                     so that the first partners' calls do not pay for a fresh process (JIT, the database's
                     first pages and statements, stage keys); ready after 30 s whatever its state, or at once
                     if it fails (default: warm up)
  --metrics-port N   serve GET /metrics (Prometheus text format) on this port (default: no metrics served)
  --metrics-host H   the interface of the metrics port (default 127.0.0.1)
  --log-format F     json: one JSON line per event on stdout; text: lines for a person on stderr
                     (default: text when stdout is a terminal, json otherwise)
  --plan FILE        the certification plan every certification run ("certify": true) follows, as JSON:
                     {"id", "operations"?, "scopes"?, "scenarios"?, "ttlSeconds"?, "longTtlSeconds"?, "renewal"?,
                     "decisiveShouldChecks"?}; absent fields take the default plan's (partner-lending-default-v2:
                     the four operations and scopes, every scenario judged by its check, ttl 5 s, long ttl
                     3600 s, a renewal; token reuse, Retry-After, revocation recovery and the granted scope
                     deciding like musts)
  --oidc-issuer URL  reviewers sign in through this OpenID Connect provider instead of local credentials
                     (default: local credentials from admin add-reviewer); redirect URI PUBLIC_URL/signin/oidc/callback
  --oidc-client-id ID  the client registered at the provider (needed with --oidc-issuer)
  --oidc-client-secret-file FILE  the client's secret (or the environment variable OIDC_CLIENT_SECRET)
  --oidc-allow CLAIM=VALUE  who may sign in: groups=cert-reviewers, roles=…, realm_access.roles=…, or
                     email_domain=vendor.example (a verified email); repeat for "any of" (at least one needed)

admin (the same storage options as serve)
  add-partner        prints the partner id and its API key, once (only a hash is stored)
  add-reviewer       prints a reviewer id and the reviewer's sign-in credential, once (reusable until
                     replaced; only a hash is stored)
  add-register-reader  prints a reader id and a key for GET /register, once (only a hash is stored)
  add-evidence-reporter  prints a reporter id and a key for POST /evidence, once (only a hash is stored)
  add-webhook        prints a webhook id and its signing secret ("whsec_…"), once (stored sealed
                     with the secrets key: SECRETS_KEY_FILE, else the attestation key)
                     add-partner and add-reviewer print which store they wrote to (on stderr): set
                     DATABASE_URL in this shell too when serve uses PostgreSQL, or the same --data-dir
  --name NAME        the partner's, reviewer's or register reader's name
  --url URL          the webhook endpoint (http or https; no redirect is followed)
  --events E,…       the event types to send (default all): partner.approved, partner.rejected,
                     partner.revoked, approval.expiring, approval.expired, run.judged
  --json             print one line of JSON: {"partnerId","apiKey"}, {"reviewerId","credential"},
                     {"readerId","key"} or {"webhookId","secret"}

Environment
  DATABASE_URL       postgres://USER:PASSWORD@HOST:PORT/DB: PostgreSQL instead of the embedded database
  SIGNING_KEY_FILE   the attestation key (private JWK or PEM, Ed25519 or ES256); generated into --data-dir when unset
  OIDC_CLIENT_SECRET the OIDC client secret when --oidc-client-secret-file is not given
  SECRETS_KEY_FILE   a file of at least 32 random characters that seals the secrets the service keeps (a run's
                     stage key); derived from the attestation key when unset
  OTEL_EXPORTER_OTLP_ENDPOINT  export traces over OTLP/HTTP (JSON) to this collector (default: no traces);
                     the other standard OTEL_* variables apply (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS…)

  --help             this text      --version   the version`;

/** Ends the command with `message` on stderr and exit code `code` (2: a usage error). */
export function fail(message: string, code = 2): never {
  process.stderr.write(`partner-certification-service: ${message}\n`);
  process.exit(code);
}
