"""Scrapes a running `entitled serve` and checks its /metrics with prometheus_client's own parser.

Usage: metrics_check.py BASE_URL METRICS_URL API_KEY

BASE_URL is the API (GET /metrics there needs a key with the `metrics` scope); METRICS_URL is
the `metricsListen` address's /metrics (no credentials). Between two scrapes it makes requests
and checks that the counters and histograms they touch moved, and that both scrapes parse.
"""
import json
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

base, metrics_url, key = sys.argv[1], sys.argv[2], sys.argv[3]


def request(method, path, body=None, auth=None, url=None):
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = "Bearer " + auth
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url or base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def scrape(url=None, auth=key):
    status, headers, text = request("GET", "/metrics", auth=auth, url=url)
    assert status == 200, (status, text)
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers["Content-Type"]
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


assert request("GET", "/metrics")[0] == 401, "/metrics without a key must be refused"
before = scrape()
build = [(dict(labels), v) for (name, labels), v in before.items() if name == "entitled_build_info"]
check(len(build) == 1 and build[0][1] == 1 and build[0][0].get("version"), "entitled_build_info{version} is 1")

assert request("GET", "/healthz")[0] == 200
assert request("GET", "/healthz")[0] == 200
status, _, _ = request("GET", "/v1/customers/alice", auth="reader-secret-0123456789")
assert status == 200, status
status, _, _ = request("POST", "/v1/apple/notifications", body={"signedPayload": "not-a-jws"})
assert status == 400, status
status, _, _ = request("POST", "/v1/apple/notifications/v1", body={"bid": "com.example.app", "password": "wrong"})
assert status in (400, 401, 403), status

after = scrape()
healthz = dict(method="GET", route="/healthz", status="200")
check(value(after, "entitled_http_requests_total", **healthz) - value(before, "entitled_http_requests_total", **healthz) == 2,
      "two GET /healthz counted under their route")
customer = dict(method="GET", route="/v1/customers/{appUserId}", status="200")
check(value(after, "entitled_http_requests_total", **customer) == value(before, "entitled_http_requests_total", **customer) + 1,
      "the customer read counted under the route pattern, not its path")
check(not any(name == "entitled_http_requests_total" and ("route", "/v1/customers/alice") in labels for (name, labels) in after),
      "no raw path as a route label")
check(value(after, "entitled_http_request_duration_seconds_count", method="GET", route="/healthz")
      >= value(after, "entitled_http_request_duration_seconds_bucket", method="GET", route="/healthz", le="0.0005"),
      "latency histogram buckets up to +Inf cover the count")
check(value(after, "entitled_http_request_duration_seconds_bucket", method="GET", route="/healthz", le="+Inf")
      == value(after, "entitled_http_request_duration_seconds_count", method="GET", route="/healthz"),
      "the +Inf bucket equals _count")
rejected = dict(version="2", type="", subtype="", outcome="rejected", code="MALFORMED_PAYLOAD")
check(value(after, "entitled_notifications_total", **rejected) == value(before, "entitled_notifications_total", **rejected) + 1,
      "the malformed V2 notification counted as rejected with its code")
v1 = [labels for (name, labels) in after if name == "entitled_notifications_total" and ("version", "1") in labels]
check(len(v1) == 1 and ("outcome", "rejected") in v1[0], "the V1 notification with a wrong password counted as rejected")
check(value(after, "entitled_customers", state="new") == value(before, "entitled_customers", state="new") + 1,
      "the customer created by the read counts as new")
# A test event to an endpoint that refuses connections: attempted, retried, pending.
# (The dispatcher learns the endpoint at its first pass; events before that are not its.)
deadline = time.time() + 20
webhooks = before
while time.time() < deadline:
    status, _, _ = request("POST", "/v1/webhooks/test", auth="admin-secret-0123456789")
    assert status == 202, status
    time.sleep(0.5)
    webhooks = scrape()
    if value(webhooks, "entitled_webhook_deliveries_total", endpoint="0", outcome="retried") >= 1:
        break
check(value(webhooks, "entitled_webhook_deliveries_total", endpoint="0", outcome="retried") >= 1,
      "a refused webhook attempt counted as retried")
check(value(webhooks, "entitled_webhook_attempt_duration_seconds_count", endpoint="0") >= 1,
      "the attempt's latency observed")
check(value(webhooks, "entitled_webhook_pending_deliveries", endpoint="0") >= 1, "the retried delivery counted as pending")

unauthenticated = scrape(url=metrics_url, auth=None)
check(value(unauthenticated, "entitled_http_requests_total", **healthz) >= 2, "metricsListen serves the same registry without a key")

if failures:
    print(f"{len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("metrics: all checks passed")
