#!/usr/bin/env bash
# Webhooks against an independent Standard Webhooks implementation (the `standardwebhooks` package
# from PyPI, in a venv under .build):
# 1. headers from `entitled _webhook-sign` verify; a changed body or another secret must fail;
# 2. a live `entitled serve` delivers to a loopback receiver (scripts/webhook_receiver.py) that
#    verifies every delivery and fails the first two: they are retried and delivered;
# 3. kill -9 of the server while deliveries are in flight, then a restart: every event is
#    delivered at least once, a duplicate carries the same id and body, and the events arrive in
#    commit order (`test` events share one ordering key, as one customer's events do);
# 4. a late-history burst: a healthy monthly subscriber's 100 days, signed by `entitled simulate`
#    and posted within seconds after the fact, reach the receiver as a start and renewals, with no
#    `subscription.expired` and no `subscription.auto_renew_disabled`.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=test-server.sh
. scripts/test-server.sh
test_venv webhooks

secret="$("$entitled" webhook-secret)"
other="$("$entitled" webhook-secret)"
[ "$secret" != "$other" ] || { echo "webhook-check: two secrets were equal" >&2; exit 1; }
body='{"id":"evt_0123456789abcdef0123456789abcdef","type":"test","data":{"note":"ünïcode ✓"}}'
timestamp="$(date +%s)"
printf '%s' "$body" | "$entitled" _webhook-sign --secret "$secret" --id evt_0123456789abcdef0123456789abcdef \
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

# The receiver: fails the first two deliveries, then answers each after 0.2 s (so some are in
# flight when the server is killed).
"$venv/bin/python" scripts/webhook_receiver.py "$secret" "$dir/received.jsonl" "$dir/receiver.port" 2 0.2 &
receiver=$!
trap 'kill $receiver 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 100); do [ -s "$dir/receiver.port" ] && break; sleep 0.1; done
[ -s "$dir/receiver.port" ] || { echo "webhook-check: the receiver did not start" >&2; exit 1; }

admin="admin-secret-0123456789"
cat > "$dir/entitled.json" <<JSON
{"apiKeys": [{"name": "admin", "secret": "$admin", "scopes": ["admin"]}],
 "http": {"accessLog": false},
 "webhooks": [{"url": "http://127.0.0.1:$(cat "$dir/receiver.port")/hook", "secret": "$secret",
               "timeoutSeconds": 1, "retryScheduleSeconds": [1]}]}
JSON
start_serve webhook-check
port="$(event_port listening)"

post_test() {
  curl -fsS -X POST -H "Authorization: Bearer $admin" "http://127.0.0.1:$port/v1/webhooks/test" \
    | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["event"]["id"])'
}
delivered() { grep -c '"status": 204' "$dir/received.jsonl" 2>/dev/null || true; }

# The endpoint receives the events committed once the dispatcher knows it: post warm-up events
# until one arrives.
touch "$dir/received.jsonl"
for _ in $(seq 1 100); do
  [ -s "$dir/received.jsonl" ] && break
  post_test > /dev/null
  sleep 0.1
done
[ -s "$dir/received.jsonl" ] || { echo "webhook-check: nothing was delivered" >&2; exit 1; }
: > "$dir/appended"
for _ in $(seq 1 12); do post_test >> "$dir/appended"; done
# Some delivered (after the two failures were retried), the rest in flight or waiting: kill -9.
for _ in $(seq 1 200); do [ "$(delivered)" -ge 3 ] && break; sleep 0.05; done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
echo "webhook-check: killed the server with $(delivered) of 12 delivered"
start_serve webhook-check
port="$(event_port listening)"
for _ in $(seq 1 6); do post_test >> "$dir/appended"; done

# Attempts the dead server had claimed come back when their lease (timeout + 5 s) ends.
for _ in $(seq 1 400); do
  [ "$("$venv/bin/python" - "$dir/appended" "$dir/received.jsonl" <<'PY'
import json, sys
appended = [line.strip() for line in open(sys.argv[1])]
ok = {json.loads(line)["id"] for line in open(sys.argv[2]) if json.loads(line)["status"] == 204}
print("yes" if set(appended) <= ok else "no")
PY
)" = yes ] && break
  sleep 0.1
done

"$venv/bin/python" - "$dir/appended" "$dir/received.jsonl" <<'PY'
import json, sys
appended = [line.strip() for line in open(sys.argv[1])]
received = [json.loads(line) for line in open(sys.argv[2])]
failures = []
if not all(r["verified"] for r in received):
    failures.append("a delivery did not verify")
if [r["status"] for r in received[:2]] != [500, 500]:
    failures.append("the first two deliveries were not the failed ones")
ok = [r for r in received if r["status"] == 204]
missing = set(appended) - {r["id"] for r in ok}
if missing:
    failures.append(f"never delivered: {sorted(missing)}")
bodies = {}
for r in received:
    if bodies.setdefault(r["id"], r["body"]) != r["body"]:
        failures.append(f"a duplicate of {r['id']} had another body")
    if json.loads(r["body"])["id"] != r["id"]:
        failures.append("webhook-id is not the event id")
first = []
for r in ok:
    if r["id"] not in first:
        first.append(r["id"])
if [i for i in first if i in appended] != appended:
    failures.append("events were first delivered out of commit order")
duplicates = len(ok) - len(set(r["id"] for r in ok))
if failures:
    sys.exit("webhook-check: " + "; ".join(failures))
print(f"webhook-check: {len(appended)} events delivered across kill -9, {duplicates} duplicate(s) with the same id, in order;"
      " retries after 500 delivered")
PY

# 4. The late-history burst. The simulator's CA first (a run that only makes a customer), so the
# server can trust its root; then the server with the app, and the subscriber's token.
kill "$pid"; wait "$pid" 2>/dev/null || true
catalog=Tests/EntitledTests/Scenarios/catalog.json
printf '{"action":"customer","customer":"ca-only"}\n' > "$dir/ca.jsonl"
"$entitled" simulate --data "$dir/sim" --scenario "$dir/ca.jsonl" --catalog "$catalog" > /dev/null 2>&1
cat > "$dir/entitled.json" <<JSON
{"apiKeys": [{"name": "admin", "secret": "$admin", "scopes": ["read", "write", "admin"]}],
 "http": {"accessLog": false},
 "apps": [{"bundleId": "com.example.scenarios", "appAppleId": 1234567890, "environments": ["Sandbox"],
           "grantEnvironments": ["Sandbox"], "appleRootCertificates": ["$dir/sim/ca/root.der"],
           "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "premium",
                         "level": 2, "entitlements": ["pro"]}]}],
 "webhooks": [{"url": "http://127.0.0.1:$(cat "$dir/receiver.port")/hook", "secret": "$secret",
               "timeoutSeconds": 1, "retryScheduleSeconds": [1]}]}
JSON
start_serve webhook-check
port="$(event_port listening)"
token="$(curl -fsS -H "Authorization: Bearer $admin" "http://127.0.0.1:$port/v1/customers/late" \
  | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["appAccountToken"])')"
cat > "$dir/late.jsonl" <<JSONL
{"action":"customer","customer":"late"}
{"action":"purchase","customer":"late","product":"pro.monthly","appAccountToken":"$token"}
{"action":"advance","by":"P100D"}
JSONL
# Virtual time starts 101 days ago: the whole history is in the past when it is posted.
start=$(( ($(date +%s) - 101 * 86400) * 1000 ))
"$entitled" simulate --data "$dir/sim" --scenario "$dir/late.jsonl" --catalog "$catalog" --start "$start" \
  --target "http://127.0.0.1:$port/v1/apple/notifications" > "$dir/late.out" 2>&1 \
  || { cat "$dir/late.out" >&2; echo "webhook-check: the simulator failed" >&2; exit 1; }

# Delivered once nothing new has arrived for two seconds (each delivery takes 0.2 s).
late_count() { grep -c '\\"appUserId\\":\\"late\\"' "$dir/received.jsonl" 2>/dev/null || true; }
last=-1
for _ in $(seq 1 60); do
  now_count="$(late_count)"
  [ "$now_count" -gt 0 ] && [ "$now_count" = "$last" ] && break
  last="$now_count"
  sleep 2
done

"$venv/bin/python" - "$dir/received.jsonl" "$dir/late.out" <<'PY'
import json, sys
received = [json.loads(line) for line in open(sys.argv[1])]
posted = sum(1 for line in open(sys.argv[2]) if line.startswith("{"))
events = {}
for r in received:
    if r["status"] == 204 and r["verified"]:
        body = json.loads(r["body"])
        if body.get("appUserId") == "late":
            events[body["id"]] = body
types = [e["type"] for e in sorted(events.values(), key=lambda e: (e["occurredAt"], e["id"]))]
failures = []
if types.count("subscription.started") != 1:
    failures.append("not one subscription.started")
if types.count("subscription.renewed") < 3:
    failures.append("fewer than 3 subscription.renewed")
for wrong in ("subscription.expired", "subscription.auto_renew_disabled", "subscription.billing_issue"):
    if wrong in types:
        failures.append(f"{wrong} for a healthy subscriber")
if failures:
    sys.exit("webhook-check: late-history burst: " + "; ".join(failures) + f" (got {types})")
print(f"webhook-check: 100 days of history posted at once ({posted} notifications): {', '.join(types)}")
PY
