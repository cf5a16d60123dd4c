#!/usr/bin/env bash
# Verifies webhook signatures with an independent Standard Webhooks implementation (the
# `standardwebhooks` package from PyPI, in a venv under .build): a secret from
# `entitled webhook-secret`, headers from `entitled _webhook-sign` over an event body; a changed
# body or another secret must fail.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/webhooks-venv
# shellcheck source=test-server.sh
. scripts/test-server.sh
test_venv "$venv" standardwebhooks standardwebhooks

secret="$(.build/debug/entitled webhook-secret)"
other="$(.build/debug/entitled webhook-secret)"
[ "$secret" != "$other" ] || { echo "webhook-check: two secrets were equal" >&2; exit 1; }
body='{"id":"evt_0123456789abcdef0123456789abcdef","type":"test","data":{"note":"ünïcode ✓"}}'
timestamp="$(date +%s)"
printf '%s' "$body" | .build/debug/entitled _webhook-sign --secret "$secret" --id evt_0123456789abcdef0123456789abcdef \
  --timestamp "$timestamp" > "$dir/headers"

"$venv/bin/python" - "$dir/headers" "$secret" "$other" "$body" <<'PY'
import sys
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

path, secret, other, body = sys.argv[1:5]
headers = dict(line.rstrip("\n").split(": ", 1) for line in open(path, encoding="utf-8"))
assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}, headers
Webhook(secret).verify(body.encode(), headers)
for wrong_secret, wrong_body in ((other, body), (secret, body + " ")):
    try:
        Webhook(wrong_secret).verify(wrong_body.encode(), headers)
    except WebhookVerificationError:
        continue
    sys.exit("webhook-check: a wrong secret or body verified")
print("webhook-check: signatures verify with standardwebhooks")
PY
