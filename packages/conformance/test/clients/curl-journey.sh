#!/bin/sh
# A partner journey in plain shell with curl, as the certification guide shows it: one token, reused
# until shortly before it expires; 401 invalid_token → a new token and one retry; 429 → Retry-After.
# The client secret goes to curl on standard input, never on its command line (visible to `ps`).
set -eu
seconds=${JOURNEY_SECONDS:-5}
token='' partner='' expires=0 status='' retry_after=''

fetch_token() {
  answer=$(printf '%s' "$PARTNER_CLIENT_SECRET" | curl -sS -X POST "$PARTNER_TOKEN_URL" \
    -H 'Accept: application/json' \
    --data-urlencode grant_type=client_credentials \
    --data-urlencode "client_id=$PARTNER_CLIENT_ID" \
    --data-urlencode client_secret@- \
    --data-urlencode scope=read:loans \
    --data-urlencode "audience=$PARTNER_AUDIENCE")
  token=$(printf '%s' "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
  partner=$(printf '%s' "$answer" | sed -n 's/.*"partnerId":"\([^"]*\)".*/\1/p')
  lifetime=$(printf '%s' "$answer" | sed -n 's/.*"expires_in":\([0-9]*\).*/\1/p')
  [ -n "$token" ] || { echo "no token: $answer" >&2; exit 1; }
  # Renew one second early: tokens and clocks are whole seconds.
  expires=$(( $(date +%s) + lifetime - 1 ))
}

list_loans() {
  [ "$(date +%s)" -lt "$expires" ] || fetch_token
  headers=$(mktemp)
  status=$(curl -sS -o /dev/null -D "$headers" -w '%{http_code}' \
    -H "Authorization: Bearer $token" "$PARTNER_BASE_URL/v3/partner/$partner/loans?limit=10")
  retry_after=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9]*\).*/\1/p' "$headers")
  rm -f "$headers"
}

end=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end" ]; do
  list_loans
  case "$status" in
    401) fetch_token; list_loans ;;             # revoked or expired: one new token, one retry
    429) sleep "${retry_after:-1}"; sleep 1 ;;   # wait as long as the API says (and a margin)
  esac
  sleep 0.3
done
echo "curl journey done"
