#!/usr/bin/env bash
# Property-based API tests: schemathesis (PyPI) generates requests from docs/openapi.yaml and sends
# them to a live `entitled serve` on loopback (debug build, a throwaway SQLite database). Any 5xx,
# or a status, content type or body that the spec does not describe, fails the run.
#
#   scripts/schemathesis.sh [EXAMPLES]     examples per operation (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."

examples="${1:-20}"
venv=.build/schemathesis-venv
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check schemathesis
fi

dir="$(mktemp -d /tmp/entitled-schemathesis.XXXXXX)"
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

key="schemathesis-secret-0123456789"
cat > "$dir/entitled.json" <<JSON
{"apiKeys": [{"name": "schemathesis", "secret": "$key", "scopes": ["read", "write", "admin"]}],
 "apps": [{"bundleId": "com.example.app", "appAppleId": 1234, "environments": ["Production", "Sandbox"],
           "sharedSecret": "v1-shared-secret-value",
           "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro",
                         "level": 1, "entitlements": ["pro"], "storefronts": ["USA"]},
                        {"productId": "lifetime", "type": "nonConsumable", "entitlements": ["extras"]}]}],
 "http": {"accessLog": false}}
JSON

.build/debug/entitled serve --config "$dir/entitled.json" --listen 127.0.0.1:0 \
  --database "sqlite:$dir/db/entitled.sqlite" > "$dir/serve.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 100); do
  port="$(grep -o '"address":"127.0.0.1:[0-9]*"' "$dir/serve.log" | grep -o '[0-9]*"$' | tr -d '"' || true)"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$dir/serve.log" >&2; echo "schemathesis: the server did not start" >&2; exit 1; }

"$venv/bin/st" run docs/openapi.yaml --url "http://127.0.0.1:$port" \
  -H "Authorization: Bearer $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples "$examples" --request-timeout 10
