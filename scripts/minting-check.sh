#!/usr/bin/env bash
# Runs the token-minting examples (examples/minting: Python, Node, Go, Swift) against a live
# `entitled serve` (debug build, throwaway SQLite): each one's token must read its own customer
# (200) and no other (403), and log an anonymous customer (created with an app key) in.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=test-server.sh
. scripts/test-server.sh

export ENTITLED_CUSTOMER_TOKEN_SECRET="minting-check-secret-0123456789abcdef"
app_key="app_minting_check_0123456789abcdef"
cat > "$dir/entitled.json" <<JSON
{"customerTokens": {"secret": "env:ENTITLED_CUSTOMER_TOKEN_SECRET"},
 "apps": [{"bundleId": "com.example.app", "environments": ["Sandbox"], "appKeys": [{"name": "check", "key": "$app_key"}]}],
 "http": {"accessLog": false}}
JSON
start_serve minting-check
base="http://127.0.0.1:$(event_port listening)"
export GOCACHE="${GOCACHE:-$PWD/.build/go-cache}"

status() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" "$base$1"; }
field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

for language in python node go swift; do
  id="user-$language"
  case "$language" in
    python) token="$(python3 examples/minting/mint.py "$id")" ;;
    node) token="$(node examples/minting/mint.js "$id")" ;;
    go) token="$(go run examples/minting/mint.go "$id")" ;;
    swift) token="$(swift examples/minting/mint.swift "$id" 2>/dev/null)" ;;
  esac
  own="$(status "/v1/customers/$id" "$token")"
  other="$(status "/v1/customers/someone-else" "$token")"
  [ "$own" = 200 ] && [ "$other" = 403 ] || {
    echo "minting-check: $language: own customer $own (want 200), another $other (want 403)" >&2
    exit 1
  }
  anonymous="$(curl -sf -X POST -H "Authorization: Bearer $app_key" "$base/v1/customers/anonymous")"
  anonymous_id="$(field appUserId <<<"$anonymous")"
  login="$(curl -s -X POST -H "Authorization: Bearer $(field token <<<"$anonymous")" -H 'Content-Type: application/json' \
    -d "{\"appUserId\": \"$id\", \"token\": \"$token\"}" "$base/v1/customers/$anonymous_id/login")"
  [ "$(field appUserId <<<"$login")" = "$id" ] || { echo "minting-check: $language: login failed: $login" >&2; exit 1; }
  echo "minting-check: $language ok"
done
# The Python minter docs/app-keys.md shows is the one just run.
python3 - <<'PY'
import re, sys
doc = open("docs/app-keys.md").read()
block = re.search(r"The Python one, in full:\n\n```python\n(.*?)```", doc, re.S).group(1)
if block not in open("examples/minting/mint.py").read():
    sys.exit("minting-check: docs/app-keys.md's Python block differs from examples/minting/mint.py")
PY
