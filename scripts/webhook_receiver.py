"""A webhook receiver on loopback for scripts/webhook-check.sh.

Usage: webhook_receiver.py SECRET LOG PORT_FILE FAIL_FIRST DELAY_SECONDS

Verifies every delivery with the standardwebhooks package (an independent Standard Webhooks
implementation); an unverifiable one is answered 401 and logged as such. The first FAIL_FIRST
verified deliveries are answered 500, the others 204 after DELAY_SECONDS. Each delivery is one
JSON line in LOG: {"id", "type", "status", "verified", "body"}.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

secret, log_path, port_file, fail_first, delay = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
webhook = Webhook(secret)
lock = threading.Lock()
seen = {"verified": 0}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            event = webhook.verify(body, headers)
            verified = True
        except WebhookVerificationError:
            event, verified = {}, False
        with lock:
            if verified:
                seen["verified"] += 1
            status = 401 if not verified else (500 if seen["verified"] <= fail_first else 204)
        if status == 204 and delay:
            time.sleep(delay)
        with lock, open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"id": headers.get("webhook-id"), "type": event.get("type"), "status": status,
                                  "verified": verified, "body": body.decode()}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file, "w", encoding="utf-8") as file:
    file.write(str(server.server_address[1]))
server.serve_forever()
