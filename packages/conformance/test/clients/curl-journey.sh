#!/bin/sh
# A partner journey in plain shell with curl, as the certification guide shows it: one token, reused
# until shortly before it expires; 401 invalid_token → a new token and one retry; 429/503 → Retry-After.
# It asks for the scopes its client is authorised for (PARTNER_SCOPES, as the partner console says),
# reads the granted scope of each token answer (absent, it is what was asked: RFC 6749 §5.1) and, before
# an operation its token lacks, asks for a new token: never the operation called with a token lacking
# its scope. It lists loans and makes each authorised create until it succeeded once (a create answered
# 503 is never re-sent: a later round makes a new one).
# The client secret goes to curl on standard input, never on its command line (visible to `ps`).
set -eu
seconds=${JOURNEY_SECONDS:-5}
scopes=${PARTNER_SCOPES:-read:loans}
token='' partner='' expires=0 granted='' status='' retry_after='' not_before=0

fetch_token() {
  answer=$(printf '%s' "$PARTNER_CLIENT_SECRET" | curl -sS -X POST "$PARTNER_TOKEN_URL" \
    -H 'Accept: application/json' \
    --data-urlencode grant_type=client_credentials \
    --data-urlencode "client_id=$PARTNER_CLIENT_ID" \
    --data-urlencode client_secret@- \
    --data-urlencode "scope=$scopes" \
    --data-urlencode "audience=$PARTNER_AUDIENCE")
  token=$(printf '%s' "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
  partner=$(printf '%s' "$answer" | sed -n 's/.*"partnerId":"\([^"]*\)".*/\1/p')
  lifetime=$(printf '%s' "$answer" | sed -n 's/.*"expires_in":\([0-9]*\).*/\1/p')
  granted=$(printf '%s' "$answer" | sed -n 's/.*"scope":"\([^"]*\)".*/\1/p')
  [ -n "$granted" ] || granted=$scopes
  [ -n "$token" ] || { echo "no token: $answer" >&2; exit 1; }
  # Renew one second early: tokens and clocks are whole seconds.
  expires=$(( $(date +%s) + lifetime - 1 ))
}

# has SCOPE: the held token's grant includes SCOPE.
has() { case " $granted " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# call METHOD PATH SCOPE [BODY]: status (0 when the scope is not granted now: not called).
call() {
  now=$(date +%s)
  [ "$now" -ge "$not_before" ] || sleep $(( not_before - now ))
  [ "$(date +%s)" -lt "$expires" ] || fetch_token
  has "$3" || fetch_token
  has "$3" || { status=0; retry_after=''; return; }
  headers=$(mktemp)
  if [ $# -ge 4 ]; then
    status=$(curl -sS -o /dev/null -D "$headers" -w '%{http_code}' -X "$1" \
      -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data "$4" \
      "$PARTNER_BASE_URL/v3/partner/$partner/$2")
  else
    status=$(curl -sS -o /dev/null -D "$headers" -w '%{http_code}' \
      -H "Authorization: Bearer $token" "$PARTNER_BASE_URL/v3/partner/$partner/$2")
  fi
  retry_after=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9]*\).*/\1/p' "$headers")
  rm -f "$headers"
  case "$status" in
    429 | 503) not_before=$(( $(date +%s) + ${retry_after:-1} + 1 )) ;; # the time given, and a margin
  esac
}

# The creates its client is authorised for: path=scope, each made until it succeeded once.
pending=''
for item in loan_draft=create:loan_draft journals=create:journal_update repayments=create:repayment; do
  case " $scopes " in *" ${item#*=} "*) pending="$pending $item" ;; esac
done

end=$(( $(date +%s) + seconds ))
round=0
while [ "$(date +%s)" -lt "$end" ]; do
  round=$(( round + 1 ))
  call GET 'loans?limit=10' read:loans
  [ "$status" != 401 ] || { fetch_token; call GET 'loans?limit=10' read:loans; } # revoked: one new token, one retry
  left=''
  for item in $pending; do
    call POST "${item%=*}" "${item#*=}" "{\"amount\":$(( 1000 + round )),\"currency\":\"EUR\"}"
    [ "$status" != 401 ] || { fetch_token; call POST "${item%=*}" "${item#*=}" "{\"amount\":$(( 1000 + round )),\"currency\":\"EUR\"}"; }
    case "$status" in 2??) ;; *) left="$left $item" ;; esac
  done
  pending=$left
  sleep 0.3
done
echo "curl journey done;${pending:- every create succeeded}${pending:+ never succeeded:$pending}"
