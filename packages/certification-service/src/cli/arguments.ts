import { parseArgs } from 'node:util';

/** The command line, parsed: every flag of serve and admin (each checks those of the other are absent). */
export const parseArguments = (argv: string[]) =>
  parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'public-url': { type: 'string' },
      'data-dir': { type: 'string' },
      'journal-dir': { type: 'string' },
      'idle-timeout': { type: 'string' },
      'max-run-duration': { type: 'string' },
      'max-open-runs': { type: 'string' },
      'max-runs-per-hour': { type: 'string' },
      'approval-valid-days': { type: 'string' },
      'expiry-notice-days': { type: 'string' },
      'register-max-age': { type: 'string' },
      'webhook-retry-schedule': { type: 'string' },
      'on-regression': { type: 'string' },
      'trust-forwarded-for': { type: 'boolean' },
      'no-warm-up': { type: 'boolean' },
      plan: { type: 'string' },
      'metrics-port': { type: 'string' },
      'retain-days': { type: 'string' },
      'evidence-retention-days': { type: 'string' },
      'shutdown-delay': { type: 'string' },
      'metrics-host': { type: 'string' },
      'log-format': { type: 'string' },
      'oidc-issuer': { type: 'string' },
      'oidc-client-id': { type: 'string' },
      'oidc-client-secret-file': { type: 'string' },
      'oidc-allow': { type: 'string', multiple: true },
      name: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean' },
    },
  });

/** The flags given. */
export type Values = ReturnType<typeof parseArguments>['values'];
