"""A partner journey on Authlib's requests OAuth2Session for the client-credentials grant, at its
defaults but the renewal window: LEEWAY seconds ahead of expiry (Authlib's default is 60), HTTP Basic
client authentication (client_secret_basic, its default), and the audience added to every token
request by a subclass (Authlib renews by itself, with the same fetch_token). It asks for the scopes its
client is authorised for (PARTNER_SCOPES, as the partner console says), reads the granted scope of each
token answer (session.token["scope"], RFC 6749 section 5.1) and, before an operation its token lacks,
fetches a new token: never the operation called with a token lacking its scope. It lists loans and
makes each authorised create until it succeeded once (a create answered 503 is never re-sent: a later
round makes a new one). TOKEN_PER_CALL=1 fetches a token before every call."""
import json
import os
import sys
import time

from authlib.integrations.requests_client import OAuth2Session

env = os.environ
token_url = env["PARTNER_TOKEN_URL"]
base_url = env["PARTNER_BASE_URL"]
per_call = env.get("TOKEN_PER_CALL") == "1"
authorised = env.get("PARTNER_SCOPES") or "read:loans create:loan_draft"

class PartnerSession(OAuth2Session):
    """The audience this API wants, in every token request (renewals included)."""

    def fetch_token(self, url=None, **kwargs):
        kwargs.setdefault("audience", env["PARTNER_AUDIENCE"])
        return super().fetch_token(url, **kwargs)


session = PartnerSession(
    env["PARTNER_CLIENT_ID"],
    env["PARTNER_CLIENT_SECRET"],
    scope=authorised,
    token_endpoint=token_url,
    grant_type="client_credentials",
    leeway=int(env.get("LEEWAY", "60")),
)

session.fetch_token()
not_before = 0.0


def granted(scope):
    """The token answer's scope (absent: what was asked, RFC 6749 section 5.1) includes scope."""
    field = session.token.get("scope") or authorised
    return scope in (field.split() if isinstance(field, str) else field)


def call(method, path, scope, body=None):
    global not_before
    for attempt in (1, 2, 3):
        time.sleep(max(0.0, not_before - time.time()))
        if per_call:
            session.fetch_token()
        if not granted(scope):
            session.fetch_token()  # a new token before an operation the held one lacks
            if not granted(scope):
                return 0  # not granted now: not called; a later round asks again
        partner = session.token["partnerId"]
        response = session.request(
            method, f"{base_url}/v3/partner/{partner}/{path}", json=body, withhold_token=False
        )
        if response.status_code == 401 and attempt == 1:
            session.fetch_token()  # revoked: a new token, one retry
            continue
        if response.status_code in (429, 503):
            not_before = time.time() + int(response.headers.get("Retry-After", "1"))
            if method == "POST":
                return response.status_code  # a create is never sent twice
            continue
        return response.status_code
    return 0


end = time.time() + int(env.get("JOURNEY_SECONDS", "10"))
calls = 0
index = 0
creates = [("loan_draft", "create:loan_draft"), ("journals", "create:journal_update"), ("repayments", "create:repayment")]
pending = [item for item in creates if item[1] in authorised.split()]
while time.time() < end:
    call("GET", "loans?limit=10", "read:loans")
    calls += 1
    if index % 2 == 1:
        for item in list(pending):
            status = call("POST", item[0], item[1], {"amount": 1000 + index, "currency": "EUR"})
            calls += 1
            if 200 <= status < 300:
                pending.remove(item)
    index += 1
    time.sleep(0.3)
print(f"authlib journey: {calls} calls, {len(pending)} creates never succeeded", file=sys.stderr)
