#!/usr/bin/env bash
# Checks GET /metrics of a live `entitled serve` (debug build, throwaway SQLite) with an
# independent parser: prometheus_client's text_string_to_metric_families (PyPI), in a venv under
# .build. Requests are made between two scrapes; the values they touch must move.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=test-server.sh
. scripts/test-server.sh
test_venv metrics

key="metrics-secret-0123456789"
cat > "$dir/entitled.json" <<JSON
{"apiKeys": [{"name": "prometheus", "secret": "$key", "scopes": ["metrics"]},
             {"name": "reader", "secret": "reader-secret-0123456789", "scopes": ["read"]},
             {"name": "admin", "secret": "admin-secret-0123456789", "scopes": ["admin"]}],
 "webhooks": [{"url": "http://127.0.0.1:9/refused", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
               "timeoutSeconds": 1, "retryScheduleSeconds": [1]}],
 "apps": [{"bundleId": "com.example.app", "appAppleId": 1234, "sharedSecret": "v1-shared-secret-value",
           "products": [{"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "pro",
                         "level": 1, "entitlements": ["pro"]}]}],
 "metricsListen": "127.0.0.1:0",
 "http": {"accessLog": false}}
JSON

start_serve metrics-check
port="$(event_port listening)"
metrics=""
for _ in $(seq 1 100); do
  metrics="$(event_port "metrics listening")"
  [ -n "$metrics" ] && break
  sleep 0.1
done
[ -n "$metrics" ] || { echo "metrics-check: no metrics listener" >&2; exit 1; }

"$venv/bin/python" scripts/metrics_check.py "http://127.0.0.1:$port" "http://127.0.0.1:$metrics/metrics" "$key"
