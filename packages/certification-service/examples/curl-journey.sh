#!/bin/sh
# A partner journey with curl alone, as a hosted run sees it: it reads PARTNER_TOKEN_URL,
# PARTNER_BASE_URL, PARTNER_AUDIENCE, PARTNER_CLIENT_ID, PARTNER_CLIENT_SECRET and PARTNER_SCOPES.
# One token, reused until a second before it expires, shared by two calls in flight at once; 401 → a
# new token and one retry; 429 and 503 → wait as long as Retry-After says before any further call; a
# create that failed is never sent again by itself (the next attempt is a new draft). The client
# secret goes to curl on standard input and the token in a header file, never on a command line (`ps`).
set -eu
seconds=${JOURNEY_SECONDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
token='' partner='' expires=0 status='' created='' attempt=0

fetch_token() {
  answer=$(printf '%s' "$PARTNER_CLIENT_SECRET" | curl -sS -X POST "$PARTNER_TOKEN_URL" \
    -H 'Accept: application/json' \
    --data-urlencode grant_type=client_credentials \
    --data-urlencode "client_id=$PARTNER_CLIENT_ID" \
    --data-urlencode client_secret@- \
    --data-urlencode "scope=read:loans create:loan_draft" \
    --data-urlencode "audience=$PARTNER_AUDIENCE")
  token=$(printf '%s' "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
  partner=$(printf '%s' "$answer" | sed -n 's/.*"partnerId":"\([^"]*\)".*/\1/p')
  lifetime=$(printf '%s' "$answer" | sed -n 's/.*"expires_in":\([0-9]*\).*/\1/p')
  [ -n "$token" ] || { echo "no token (the answer had none)" >&2; exit 1; }
  expires=$(( $(date +%s) + lifetime - 1 ))
}

fresh_token() { [ -n "$token" ] && [ "$(date +%s)" -lt "$expires" ] || fetch_token; }

# call NAME METHOD PATH [JSON]: one call with the token held now; its status goes to $work/NAME.status.
call() {
  printf 'Authorization: Bearer %s\n' "$token" > "$work/$1.auth"
  if [ $# -ge 4 ]; then
    curl -sS -o /dev/null -D "$work/$1.headers" -w '%{http_code}' -X "$2" -H @"$work/$1.auth" \
      -H 'Content-Type: application/json' --data-binary "$4" "$PARTNER_BASE_URL$3" > "$work/$1.status"
  else
    curl -sS -o /dev/null -D "$work/$1.headers" -w '%{http_code}' -H @"$work/$1.auth" \
      "$PARTNER_BASE_URL$3" > "$work/$1.status"
  fi
}

# settle NAME: reads the call's status; waits out a Retry-After before anything else is sent.
settle() {
  status=$(cat "$work/$1.status")
  case "$status" in
    401) token='' ;;
    429|503)
      wait=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9]*\).*/\1/p' "$work/$1.headers")
      sleep $(( ${wait:-1} + 1 )) ;;
  esac
}

fetch_token
end=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end" ]; do
  # Two reads in flight at once, on the one token held.
  fresh_token
  call a GET "/v3/partner/$partner/loans?limit=10" &
  call b GET "/v3/partner/$partner/loans?limit=5" &
  wait
  settle a
  settle b
  if [ -z "$created" ]; then
    fresh_token
    attempt=$((attempt + 1))
    call c POST "/v3/partner/$partner/loan_draft" "{\"amount\":1000,\"currency\":\"EUR\",\"reference\":\"draft-$attempt\"}"
    settle c
    if [ "$status" = 201 ] || [ "$status" = 200 ]; then created=yes; fi
  fi
  sleep 0.3
done
echo "curl journey done"
