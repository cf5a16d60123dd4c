#!/usr/bin/env bash
# The console in headless Chromium (docs/operations.md, "Console"): `entitled dev` (server and
# App Store simulator on one virtual clock) gets a small simulated history through its /dev/
# control routes, then scripts/console_browser_test.py logs in to /console with the dev API key,
# checks the numbers each page shows against the history, searches an order id and extends a
# subscription through the simulator's fake App Store Server API, fails on any browser console error or
# CSP violation, and writes a screenshot of each page under .build/console-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v chromium >/dev/null 2>&1 || scripts/install-deps.sh
# shellcheck source=test-server.sh
. scripts/test-server.sh   # $entitled, $dir, $pid, the EXIT trap that stops the server, event_port

"$entitled" dev --listen 127.0.0.1:0 --control 127.0.0.1:0 --data "$dir/data" --day-every 0 --no-seed \
  > "$dir/serve.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 300); do
  port="$(event_port listening)"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$dir/serve.log" >&2; echo "console browser test: entitled dev did not start" >&2; exit 1; }
key="dev-key-entitled-local-only"
base="http://127.0.0.1:$port"

act() {
  curl -sf -X POST "$base/dev/actions" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d "$1" >/dev/null \
    || { echo "console browser test: action $1 failed" >&2; exit 1; }
}
# alice and bob pay (monthly, yearly), carol starts a free trial, dave buys and is refunded.
for who in alice bob carol dave; do act "{\"action\":\"customer\",\"customer\":\"$who\"}"; done
act '{"action":"purchase","customer":"alice","product":"pro.monthly"}'
act '{"action":"purchase","customer":"bob","product":"pro.yearly"}'
act '{"action":"purchase","customer":"carol","product":"pro.monthly","offer":"intro"}'
act '{"action":"purchase","customer":"dave","product":"basic.monthly"}'
act '{"action":"refund","customer":"dave","product":"basic.monthly"}'
curl -sf -X POST "$base/dev/clock/advance" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"days":1}' >/dev/null

# Expected: 2 paid (MRR 9.99 + 99.99/12), 1 trial, 4 new, 1 refund; the timeline in words; alice's
# order found through the fake App Store Server API, and a support action (extend) recorded; the
# revenue of the range (alice's, bob's and dave's purchases, before the refund); dave granted pro
# by hand (the catalog gives pro and basic).
expected='{"overview": {"card-active": 2, "card-trials": 1, "card-new": 4, "card-renewals": 0},
  "search": "ali", "customers": ["alice"], "customer": "alice",
  "timeline": ["Subscribed to pro.monthly, $9.99"], "minIngested": 5, "bundleId": "com.example.app",
  "orderCustomer": "alice", "revenue": "$114.97", "grant": ["dave", "pro"], "entitlements": ["basic", "pro"]}'
python3 scripts/console_browser_test.py "$base" "$key" "$expected" .build/console-screenshots
