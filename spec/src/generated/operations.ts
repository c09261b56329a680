// Generated from spec/openapi.yaml by `pnpm generate` (spec/scripts/generate.mjs). Do not edit.

/** Every scope of the oauth2 clientCredentials flow, in spec order. */
export const scopes = ["read:loans","create:loan_draft","create:journal_update","create:repayment"] as const;

/** The token audience, as a server-variable template (the partner API base address). */
export const audienceTemplate = "{base_url}" as const;

/** operationId → method, path template, server ('auth' = {auth_url}, 'api' = {base_url}) and required scope. */
export const operations = {
  "requestToken": {
    "method": "POST",
    "path": "/oauth/token",
    "server": "auth",
    "scope": null
  },
  "listLoans": {
    "method": "GET",
    "path": "/v3/partner/{partner_id}/loans",
    "server": "api",
    "scope": "read:loans"
  },
  "createLoanDraft": {
    "method": "POST",
    "path": "/v3/partner/{partner_id}/loan_draft",
    "server": "api",
    "scope": "create:loan_draft"
  },
  "createJournalUpdate": {
    "method": "POST",
    "path": "/v3/partner/{partner_id}/journals",
    "server": "api",
    "scope": "create:journal_update"
  },
  "createRepayment": {
    "method": "POST",
    "path": "/v3/partner/{partner_id}/repayments",
    "server": "api",
    "scope": "create:repayment"
  }
} as const;
