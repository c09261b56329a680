#!/bin/sh
# A partner journey with curl alone, as a hosted run sees it: it reads PARTNER_TOKEN_URL,
# PARTNER_BASE_URL, PARTNER_AUDIENCE, PARTNER_CLIENT_ID, PARTNER_CLIENT_SECRET and PARTNER_SCOPES (the
# scopes the client is authorised for, space-separated; default read:loans) and calls every operation
# those scopes open: listLoans, createLoanDraft, createJournalUpdate, createRepayment.
# One token, asked for those scopes and reused until a second before it expires, shared by two calls in
# flight at once (one curl with --parallel: curl 7.68 or later). The token answer's `scope` is what was
# granted: an operation the token lacks is not called; a new token is asked for first, and when that
# one lacks it too, the operation waits for a later round. 401 → the token is dropped (never sent again) and the next call gets a new one; 429 and
# 503 → wait as long as Retry-After says before any further call; a create that failed is never sent
# again by itself (the next attempt is a new draft). The client secret goes to curl on standard input
# and the token in a header file, never on a command line (`ps`).
set -eu
: "${PARTNER_TOKEN_URL:?set PARTNER_TOKEN_URL (the run's tokenUrl)}"
: "${PARTNER_BASE_URL:?set PARTNER_BASE_URL (the run's baseUrl)}"
: "${PARTNER_AUDIENCE:?set PARTNER_AUDIENCE (the run's audience)}"
: "${PARTNER_CLIENT_ID:?set PARTNER_CLIENT_ID (the run's clientId)}"
: "${PARTNER_CLIENT_SECRET:?set PARTNER_CLIENT_SECRET (the run's clientSecret)}"
scopes=${PARTNER_SCOPES:-read:loans}
seconds=${JOURNEY_SECONDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
token='' granted='' partner='' expires=0 status='' attempt=0

# The creates still to make once, as "path:scope" words: those the authorised scopes open.
todo=''
for create in loan_draft:create:loan_draft journals:create:journal_update repayments:create:repayment; do
  case " $scopes " in *" ${create#*:} "*) todo="$todo $create" ;; esac
done

fetch_token() {
  answer=$(printf '%s' "$PARTNER_CLIENT_SECRET" | curl -sS -X POST "$PARTNER_TOKEN_URL" \
    -H 'Accept: application/json' \
    --data-urlencode grant_type=client_credentials \
    --data-urlencode "client_id=$PARTNER_CLIENT_ID" \
    --data-urlencode client_secret@- \
    --data-urlencode "scope=$scopes" \
    --data-urlencode "audience=$PARTNER_AUDIENCE")
  token=$(printf '%s' "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
  granted=$(printf '%s' "$answer" | sed -n 's/.*"scope":"\([^"]*\)".*/\1/p')
  partner=$(printf '%s' "$answer" | sed -n 's/.*"partnerId":"\([^"]*\)".*/\1/p')
  lifetime=$(printf '%s' "$answer" | sed -n 's/.*"expires_in":\([0-9]*\).*/\1/p')
  if [ -z "$token" ]; then
    error=$(printf '%s' "$answer" | sed -n 's/.*"error":"\([^"]*\)".*/\1/p')
    echo "no token: the token endpoint answered ${error:-without one}" >&2
    exit 1
  fi
  expires=$(( $(date +%s) + lifetime - 1 ))
}

fresh_token() { [ -n "$token" ] && [ "$(date +%s)" -lt "$expires" ] || fetch_token; }

# holds SCOPE: whether the token held was granted SCOPE.
holds() { case " $granted " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

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

# reads: two reads in flight at once, on the one token held: one curl sends both before either answer
# is read (two processes could start the second after the first was answered 429); statuses as call's.
# (--no-progress-meter first: in parallel mode, -s alone leaves the progress meter on standard error).
reads() {
  printf 'Authorization: Bearer %s\n' "$token" > "$work/read.auth"
  curl --no-progress-meter --parallel --parallel-immediate \
    -sS -o /dev/null -D "$work/a.headers" -w 'a %{http_code}\n' -H @"$work/read.auth" \
    "$PARTNER_BASE_URL/v3/partner/$partner/loans?limit=10" --next \
    -sS -o /dev/null -D "$work/b.headers" -w 'b %{http_code}\n' -H @"$work/read.auth" \
    "$PARTNER_BASE_URL/v3/partner/$partner/loans?limit=5" > "$work/reads"
  sed -n 's/^a //p' "$work/reads" > "$work/a.status"
  sed -n 's/^b //p' "$work/reads" > "$work/b.status"
}

# settle NAME: reads the call's status; a 401 drops the token; waits out a Retry-After before anything else is sent.
settle() {
  status=$(cat "$work/$1.status")
  case "$status" in
    401) token='' granted='' ;;
    429|503)
      wait=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9]*\).*/\1/p' "$work/$1.headers")
      sleep $(( ${wait:-1} + 1 )) ;;
  esac
}

# create PATH SCOPE: one attempt at a create, with a token granted SCOPE; done once it succeeded.
create() {
  fresh_token
  # The token held lacks the scope (a narrowed grant): ask again before calling; still lacking, wait.
  if ! holds "$2"; then
    fetch_token
    holds "$2" || return 0
  fi
  attempt=$((attempt + 1))
  call c POST "/v3/partner/$partner/$1" "{\"amount\":1000,\"currency\":\"EUR\",\"reference\":\"$1-$attempt\"}"
  settle c
  case "$status" in 2??) todo=$(printf '%s' "$todo" | sed "s| $1:[^ ]*||") ;; esac
}

fetch_token
end=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end" ]; do
  fresh_token
  case " $scopes " in *" read:loans "*) holds read:loans || fetch_token ;; esac
  if holds read:loans; then
    reads
    settle a
    settle b
  fi
  for next in $todo; do create "${next%%:*}" "${next#*:}"; done
  sleep 0.3
done
echo "curl journey done"
