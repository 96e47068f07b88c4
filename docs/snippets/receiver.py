# A webhook receiver for the Workspace Service. It checks both signatures of every delivery and
# answers 204 when they match, 400 when they don't. Python 3.9 or later, standard library only:
#   WEBHOOK_SECRET=whsec_… PORT=3000 python3 receiver.py
# After rotating the endpoint's secret, give both until the old one expires:
#   WEBHOOK_SECRET="whsec_new… whsec_old…"
import base64
import errno
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

SECRETS = os.environ.get("WEBHOOK_SECRET", "").split()
PORT = os.environ.get("PORT") or "3000"
TOLERANCE_S = 5 * 60  # a webhook-timestamp further from now is refused (a replay)


def sign(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()


def verify(body, headers):
    """The signature headers that match; raises ValueError saying why the delivery is refused."""
    msg_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    if not msg_id or not timestamp.isdigit():
        raise ValueError("webhook-id or webhook-timestamp is missing")
    if abs(time.time() - int(timestamp)) > TOLERANCE_S:
        raise ValueError("webhook-timestamp is more than 5 minutes away")
    # Standard Webhooks: space-separated "v1,<base64>" entries (one per live secret), each an
    # HMAC-SHA256 of "id.timestamp.body" keyed with the base64-decoded part after "whsec_".
    signed = f"{msg_id}.{timestamp}.".encode() + body
    entries = headers.get("webhook-signature", "").split()
    given = [base64.b64decode(e[3:]) for e in entries if e.startswith("v1,")]
    keys = [base64.b64decode(s.removeprefix("whsec_")) for s in SECRETS]
    if not any(hmac.compare_digest(g, sign(key, signed)) for key in keys for g in given):
        raise ValueError("webhook-signature matches no secret")
    # X-Service-Signature: hex HMAC-SHA256 of the body, keyed with the whole secret string. While a
    # rotation overlaps (several v1 entries above) it is keyed with the old secret, so a receiver
    # that has only the new one relies on webhook-signature until the old secret expires.
    service = headers.get("x-service-signature", "").encode()
    if any(hmac.compare_digest(service, sign(s.encode(), body).hex().encode()) for s in SECRETS):
        return ["webhook-signature", "X-Service-Signature"]
    if len(given) > 1:
        return ["webhook-signature"]
    raise ValueError("X-Service-Signature matches no secret")


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        # The exact bytes received: verify them before parsing.
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            verified = verify(body, self.headers)
            event = json.loads(body)
        except ValueError as err:  # also a bad base64 entry or a body that is not JSON
            print(f"refused: {err}", flush=True)
            self.send_response(400)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(str(err).encode())
            return
        print(f"verified {event['id']} {event['event']} ({', '.join(verified)})", flush=True)
        self.send_response(204)  # any 2xx within 15 s is a success
        self.end_headers()


def cannot_listen(reason):
    """Says why it cannot listen, in one line, and how to choose another port; exits 1."""
    other = int(PORT) + 1 if PORT.isdigit() and 0 < int(PORT) < 65535 else 3001
    sys.exit(f"{reason}. Choose another port: PORT={other} python3 receiver.py, and use it in the endpoint's URL.")


if not SECRETS:
    sys.exit("Set WEBHOOK_SECRET to the endpoint's signing secret (whsec_...).")
if not PORT.isdigit() or int(PORT) > 65535:
    cannot_listen(f'PORT must be 0 to 65535; got "{PORT}"')
try:
    server = HTTPServer(("", int(PORT)), Receiver)
except OSError as err:
    if err.errno == errno.EADDRINUSE:
        cannot_listen(f"Port {PORT} is already in use (another receiver, or another program)")
    cannot_listen(f"Cannot listen on port {PORT}: {err.strerror}")
print(f"listening on port {PORT}", flush=True)
server.serve_forever()
