#!/usr/bin/env python3
"""Drives scripts/test-scale.sh: servers, deliveries, a kill -9, and the checks (docs/scaling.md)."""
import argparse, base64, concurrent.futures, json, os, random, re, subprocess, sys, threading, time
import urllib.error, urllib.request

KEY = "scale-secret-0123456789"
p = argparse.ArgumentParser()
for name in ("entitled", "dir", "simulator", "primary", "replica"):
    p.add_argument("--" + name, required=True)
p.add_argument("--customers", type=int, default=24)
# "thisServer" turns the cross-server check off: the phase at the end must then fail.
p.add_argument("--read-your-writes", default="allServers")
p.add_argument("--cross-reads", type=int, default=8)
args = p.parse_args()
rng = random.Random(20)
started = time.monotonic()


def fail(message):
    print("test-scale: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def http(method, url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_for(what, condition, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def psql(url, sql):
    out = subprocess.run(["psql", url, "-At", "-c", sql], check=True, capture_output=True, text=True).stdout
    return out.strip()


# The simulator: customers and their stories, every notification kept with its signed payload.
def _sim_up():
    try:
        return http("GET", args.simulator + "/clock", timeout=2)[0] == 200
    except OSError:
        return False


wait_for("the simulator", _sim_up)
notifications = []  # (uuid, signedPayload, customer)


def act(action):
    status, body = http("POST", args.simulator + "/actions", action)
    if status != 200:
        fail(f"simulator action {action}: {status} {body[:300]!r}")
    for n in json.loads(body)["notifications"]:
        notifications.append((n["notificationUUID"], n["signedPayload"], n.get("customerId")))


def advance(by):
    status, body = http("POST", args.simulator + "/clock/advance", {"by": by})
    if status != 200:
        fail(f"clock advance: {status} {body[:300]!r}")
    for n in json.loads(body).get("notifications", []):
        notifications.append((n["notificationUUID"], n["signedPayload"], n.get("customerId")))


customers = [f"c{i:03d}" for i in range(args.customers)]
stories = ["pro.monthly", "plus.monthly", "basic.monthly", "lifetime", "pass.month", "pro.monthly"]
for i, customer in enumerate(customers):
    act({"action": "customer", "customer": customer})
    act({"action": "purchase", "customer": customer, "product": stories[i % len(stories)]})
    if i % 6 == 5:
        # Its renewals fail: billing retry, then expiry.
        act({"action": "customer", "customer": customer, "paymentMethod": "failing"})
advance("P10D")
for i, customer in enumerate(customers):
    product = stories[i % len(stories)]
    if i % 6 == 0:
        act({"action": "autoRenew", "customer": customer, "product": product, "enabled": False})
    elif i % 6 == 1:
        act({"action": "refund", "customer": customer, "product": product})
    elif i % 6 == 2:
        act({"action": "upgrade", "customer": customer, "product": product, "to": "pro.monthly"})
advance("P1M")
advance("P1M")
print(f"test-scale: {len(notifications)} notifications from the simulator", file=sys.stderr)


def claims(jws):
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


# What each customer's app posts (the first signed transaction of each of its original
# transactions): a client's write, which it reads back at once.
links, owner_of, otids = {}, {}, set()
for uuid, payload, customer in notifications:
    signed = claims(payload).get("data", {}).get("signedTransactionInfo")
    if not signed:
        continue
    otid = claims(signed)["originalTransactionId"]
    otids.add(otid)
    if customer and otid not in links:
        links[otid], owner_of[otid] = signed, customer
if not owner_of:
    fail("no notification names its customer")

# Servers.
root = os.path.join(args.dir, "sim", "ca", "root.der")
config = {
    "apiKeys": [{"name": "scale", "secret": KEY, "scopes": ["read", "write", "admin"]}],
    "apps": [{"bundleId": "com.example.scenarios", "appAppleId": 1234567890, "environments": ["Sandbox"],
              "grantEnvironments": ["Sandbox"], "appleRootCertificates": [root],
              "serverAPI": {"keyId": "SCALEKEY01", "issuerId": "11111111-2222-4333-8444-555555555555",
                            "privateKeyFile": os.path.join(args.dir, "key.p8"), "baseURL": args.simulator},
              "products": [
                  {"productId": "pro.monthly", "type": "autoRenewable", "subscriptionGroup": "premium", "level": 2, "entitlements": ["pro"]},
                  {"productId": "plus.monthly", "type": "autoRenewable", "subscriptionGroup": "premium", "level": 1, "entitlements": ["pro", "plus"]},
                  {"productId": "basic.monthly", "type": "autoRenewable", "subscriptionGroup": "premium", "level": 3, "entitlements": ["basic"]},
                  {"productId": "lifetime", "type": "nonConsumable", "entitlements": ["pro"]},
                  {"productId": "pass.month", "type": "nonRenewing", "entitlements": ["pass"], "subscriptionGroup": "pass", "duration": "P1M"}]}],
    "database": {"primary": args.primary, "replicas": [args.replica], "readYourWrites": args.read_your_writes},
    "storage": {"connections": 4},
    "http": {"accessLog": False},
}
config_path = os.path.join(args.dir, "entitled.json")
with open(config_path, "w") as f:
    json.dump(config, f)


class Server:
    def __init__(self, name, database=None):
        self.name, self.database, self.process, self.url = name, database, None, None
        self.log = os.path.join(args.dir, name + ".log")

    def start(self):
        command = [args.entitled, "serve", "--config", config_path, "--listen", "127.0.0.1:0"]
        if self.database:
            command += ["--database", self.database]
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

        def listening():
            if self.process.poll() is not None:
                fail(f"{self.name} exited: " + open(self.log).read()[-2000:])
            for line in open(self.log).read().splitlines():
                if '"event":"listening"' in line:
                    port = re.search(r'"address":"127\.0\.0\.1:(\d+)"', line)
                    if port and "127.0.0.1:" + port.group(1) != (self.url or "").removeprefix("http://"):
                        return port.group(1)
            return None
        self.url = "http://127.0.0.1:" + wait_for(self.name + " to listen", listening)

    def kill(self):
        self.process.kill()
        self.process.wait()


reference = Server("reference", "sqlite:" + os.path.join(args.dir, "reference.sqlite"))
cluster = [Server(f"serve{i}") for i in range(3)]
reference.start()
for server in cluster:
    server.start()
status, body = http("GET", cluster[0].url + "/readyz")
if status != 200:
    fail(f"/readyz: {status} {body!r}")

# The plan: every notification and every posted transaction, shuffled, 15% posted twice.
plan = [("notify", uuid, payload) for uuid, payload, _ in notifications]
plan += [("link", otid, owner_of[otid]) for otid in sorted(owner_of)]
reference_plan = list(plan)
rng.shuffle(plan)
for item in rng.sample(plan, len(plan) * 15 // 100):
    plan.insert(rng.randrange(len(plan) + 1), item)


def deliver(server, item):
    kind, key, value = item
    if kind == "notify":
        return http("POST", server.url + "/v1/apple/notifications", {"signedPayload": value})
    return http("POST", f"{server.url}/v1/customers/{value}/transactions", {"signedTransaction": links[key]})


for item in reference_plan:
    status, body = deliver(reference, item)
    if status != 200:
        fail(f"reference delivery {item[0]} {item[1]}: {status} {body[:300]!r}")

acknowledged, stale_reads, lock = set(), [], threading.Lock()
counter = iter(range(10**9))


def send(item):
    """Round-robin with retry on another server, as Apple retries; a client reads after its write."""
    for attempt in range(60):
        server = cluster[(next(counter)) % len(cluster)]
        try:
            status, body = deliver(server, item)
        except OSError:
            time.sleep(0.05)
            continue
        if status >= 500:
            time.sleep(0.05)
            continue
        if status != 200:
            fail(f"{server.name}: {item[0]} {item[1]}: {status} {body[:300]!r}")
        if item[0] == "notify":
            with lock:
                acknowledged.add(item[1])
        else:
            # The same client reads right after its own write, from the same server.
            try:
                read_status, answer = http("GET", f"{server.url}/v1/customers/{item[2]}")
            except OSError:
                return
            product = claims(links[item[1]])["productId"]
            if read_status == 200 and product.encode() not in answer:
                with lock:
                    stale_reads.append((server.name, item[2], product))
        return
    fail(f"{item[0]} {item[1]} was never accepted")


half = len(plan) // 2
with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
    futures = [pool.submit(send, item) for item in plan[:half]]
    # Kill while requests are in flight.
    while sum(f.done() for f in futures) < half * 3 // 4:
        time.sleep(0.01)
    killed_at = int(time.time() * 1000)
    cluster[1].kill()
    print(f"test-scale: killed {cluster[1].name} with -9 after {sum(f.done() for f in futures)} deliveries", file=sys.stderr)
    futures += [pool.submit(send, item) for item in plan[half:]]
    cluster[1].start()
    for f in futures:
        f.result()
print(f"test-scale: {len(plan)} deliveries ({len(acknowledged)} distinct notifications acknowledged)", file=sys.stderr)

if stale_reads:
    fail(f"a client's read after its write missed it: {stale_reads[:5]}")
uuids = ",".join("'" + u + "'" for u in sorted(acknowledged))
stored = int(psql(args.primary, f"SELECT count(*) FROM notifications WHERE notification_uuid IN ({uuids})"))
if stored != len(acknowledged):
    fail(f"{len(acknowledged) - stored} acknowledged notifications are not in the ledger")
total = int(psql(args.primary, "SELECT count(*) FROM notifications WHERE notification_uuid IS NOT NULL"))
if total != len(notifications):
    fail(f"the ledger holds {total} notifications, the simulator sent {len(notifications)} distinct ones")


def normalized(body):
    """An answer without what depends on arrival, not on the facts: the time of the answer, the
    customer's random token, when each message arrived and its row id in this ledger."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if k not in ("serverTime", "appAccountToken", "receivedAt")
                    and not (k == "id" and isinstance(v, str) and v.startswith("fact-"))}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(json.loads(body))


# The backfill jobs (posted transactions whose history was not yet in the ledger) finish, once each.
# A runner claims one job at a time, so the killed process may hold one lease, claimed before the
# kill: that job is taken over when its lease (JobRunner.leaseMilliseconds) ends, after this test.
def jobs_settled():
    return psql(args.primary, "SELECT count(*) FROM jobs WHERE status = 'pending' OR status = 'failed' "
                f"OR (status = 'running' AND updated_at >= {killed_at})") == "0"


wait_for("the backfill jobs", jobs_settled, seconds=60)
rows = psql(args.primary, "SELECT count(*), coalesce(max(attempts), 0), count(*) FILTER (WHERE attempts > 1) FROM jobs").split("|")
jobs, most, again = int(rows[0]), int(rows[1]), int(rows[2])
held = int(psql(args.primary, "SELECT count(*) FROM jobs WHERE status = 'running'"))
if most > 1 or held > 1:
    fail(f"{again} of {jobs} backfill jobs ran more than once, {held} are held")

# The replica has everything; then every server answers what the reference answers.
lsn = psql(args.primary, "SELECT pg_current_wal_lsn()")
wait_for("the replica to replay", lambda: psql(args.replica, f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn") == "t")
def replica_transactions():
    return int(psql(args.replica, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))


replica_before = replica_transactions()
differences = []
for customer in customers:
    expected_status, expected = http("GET", f"{reference.url}/v1/customers/{customer}")
    for server in cluster:
        status, body = http("GET", f"{server.url}/v1/customers/{customer}")
        if status != expected_status or normalized(body) != normalized(expected):
            differences.append((server.name, customer))
for otid in sorted(otids):
    expected_status, expected = http("GET", f"{reference.url}/v1/subscriptions/{otid}")
    for server in cluster:
        status, body = http("GET", f"{server.url}/v1/subscriptions/{otid}")
        if status != expected_status or (status == 200 and normalized(body) != normalized(expected)):
            differences.append((server.name, otid))
            if len(differences) == 1:
                print("reference:", json.dumps(normalized(expected), sort_keys=True)[:1500], "\n", server.name + ":",
                      json.dumps(normalized(body), sort_keys=True)[:1500], file=sys.stderr)
if differences:
    fail(f"{len(differences)} answers differ from the single server's, e.g. {differences[:5]}")
# Caught up and idle, the replica served those reads (each a transaction there; psql adds two).
replica_reads = replica_transactions() - replica_before
if replica_reads < len(customers):
    fail(f"the replica served {replica_reads} reads of the {len(customers) * 4} customer reads once caught up")

# Read-your-writes across servers: a client posts a new purchase through one server and reads
# its answer at once through the next one (round-robin). Before each write the replica has
# replayed everything, so the reading server's own last commit is no reason to avoid it: only the
# customer's stamp on the primary (database.readYourWrites: allServers) keeps the read off the
# replica, which replays the write 200 ms late.
# Not those who own the lifetime product already (i % 6 == 3) or whose payments fail (i % 6 == 5).
cross = [c for i, c in enumerate(customers) if i % 6 not in (3, 5)][:args.cross_reads]
purchases = []
for customer in cross:
    before = len(notifications)
    act({"action": "purchase", "customer": customer, "product": "lifetime"})
    signed = [claims(n[1])["data"].get("signedTransactionInfo") for n in notifications[before:]]
    if not signed or not signed[0]:
        fail(f"no signed transaction for {customer}'s purchase")
    purchases.append((customer, signed[0]))


def replica_caught_up():
    lsn = psql(args.primary, "SELECT pg_current_wal_lsn()")
    return psql(args.replica, f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn") == "t"


missed = []
for k, (customer, signed) in enumerate(purchases):
    wait_for("the replica to replay", replica_caught_up)
    writer, reader = cluster[k % len(cluster)], cluster[(k + 1) % len(cluster)]
    status, body = http("POST", f"{writer.url}/v1/customers/{customer}/transactions", {"signedTransaction": signed})
    if status != 200:
        fail(f"{writer.name}: posting {customer}'s purchase: {status} {body[:300]!r}")
    status, answer = http("GET", f"{reader.url}/v1/customers/{customer}")
    if status != 200 or b'"lifetime"' not in answer:
        missed.append(f"{customer} (written through {writer.name}, read through {reader.name})")
if missed:
    fail(f"readYourWrites {args.read_your_writes}: {len(missed)} of {len(purchases)} reads through another server "
         f"missed the write just made: {missed[:3]}")
for server in cluster:
    server.process.terminate()
reference.process.terminate()
print(f"test-scale: ok: {len(customers)} customers, {len(otids)} subscriptions equal on 3 servers and the reference; "
      f"{jobs} backfill jobs ran once; the replica served {replica_reads} of the final reads; "
      f"{len(purchases)} reads through another server right after a write saw it; {time.monotonic() - started:.1f} s", file=sys.stderr)
