#!/usr/bin/env python3
"""A webhook receiver written with Python's standard library only, as a partner might write one.

It verifies the Standard Webhooks signature itself (HMAC-SHA256 over "id.timestamp.body" with the
base64 secret after "whsec_", constant-time compare, a timestamp within five minutes), answers 204 to
a valid delivery and 401 to an invalid one, and prints one JSON line per request on stdout.
POST /_control {"refuse": true|false} makes it answer 503 to valid deliveries (an outage) or not.

Usage: webhook-receiver.py SECRET_FILE   (prints {"listening": PORT} first; the file is read at each request)
"""
import base64
import hashlib
import hmac
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET_FILE = sys.argv[1]
TOLERANCE = 300


def key():
    """The secret, read at each request (the file may be written after the receiver starts)."""
    try:
        with open(SECRET_FILE, encoding="utf-8") as handle:
            secret = handle.read().strip()
    except OSError:
        return None
    return base64.b64decode(secret[len("whsec_"):]) if secret.startswith("whsec_") else None
state = {"refuse": False}


def emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def check(headers, body):
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not msg_id or not timestamp or not signatures:
        return "missing webhook-id, webhook-timestamp or webhook-signature"
    try:
        sent = int(timestamp)
    except ValueError:
        return "webhook-timestamp is not an integer"
    if abs(time.time() - sent) > TOLERANCE:
        return "webhook-timestamp is outside the tolerance"
    secret = key()
    if secret is None:
        return "no whsec_ secret in the secret file yet"
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(secret, signed, hashlib.sha256).digest())
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected):
            return None
    return "no matching v1 signature"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status):
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length > 1_000_000:
            return self.answer(413)
        body = self.rfile.read(length)
        if self.path == "/_control":
            state["refuse"] = bool(json.loads(body or b"{}").get("refuse"))
            emit({"control": state["refuse"]})
            return self.answer(204)
        problem = check(self.headers, body)
        if problem:
            emit({"rejected": problem, "id": self.headers.get("webhook-id")})
            return self.answer(401)
        event = json.loads(body)
        if state["refuse"]:
            emit({"refused": self.headers.get("webhook-id"), "type": event.get("type")})
            return self.answer(503)
        emit({"id": self.headers.get("webhook-id"), "type": event["type"], "data": event["data"],
              "timestamp": event["timestamp"]})
        return self.answer(204)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
emit({"listening": server.server_address[1]})
try:
    server.serve_forever()
except KeyboardInterrupt:
    pass
