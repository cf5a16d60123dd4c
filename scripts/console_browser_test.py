#!/usr/bin/env python3
"""The console in a real browser: headless Chromium, driven over the DevTools protocol (a small
WebSocket client on the standard library alone), logs in to /console with an API key, opens each
page, checks the numbers the DOM shows, writes a screenshot of each page and fails on any
console error, uncaught exception or Content-Security-Policy violation.

    console_browser_test.py BASE_URL API_KEY EXPECTED_JSON SCREENSHOT_DIR
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class DevTools:
    """One page target's DevTools WebSocket (RFC 6455 text frames, client side)."""

    def __init__(self, url):
        host_port, path = url[len("ws://"):].split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("DevTools closed the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("DevTools refused the WebSocket: " + head.decode(errors="replace"))
        self.next_id = 0
        self.events = []
        # Error log lines a check provokes on purpose (a refusal), each allowed once.
        self.allowed_errors = []

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            data += chunk
        return data

    def _send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise RuntimeError("DevTools closed the connection")
            if opcode in (0x9, 0xA):
                continue
            message += payload
            if b0 & 0x80:
                return json.loads(message)

    def call(self, method, **params):
        self.next_id += 1
        wanted = self.next_id
        self._send(json.dumps({"id": wanted, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, what, seconds=20):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return
            time.sleep(0.1)
        text = self.evaluate("document.body ? document.body.innerText.slice(0, 2000) : ''")
        raise AssertionError(f"timed out waiting for {what}; the page shows:\n{text}")

    def errors(self):
        found = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console.error: " + json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                text = params["entry"].get("text", "")
                # A refusal the test asked for on purpose is logged by Chromium as a failed load once.
                allowed = next((a for a in self.allowed_errors if a in text), None)
                if allowed is not None:
                    self.allowed_errors.remove(allowed)
                    continue
                found.append("log: " + text[:500])
        return found


def start_browser(profile):
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not binary:
        raise SystemExit("console browser test: chromium is not installed (scripts/install-deps.sh installs it)")
    process = subprocess.Popen(
        [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--metrics-recording-only", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
         f"--user-data-dir={profile}", "--window-size=1280,1000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.path.exists(port_file):
            lines = open(port_file).read().split()
            if len(lines) >= 2:
                port = lines[0]
                for _ in range(100):
                    try:
                        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5))
                        pages = [t for t in targets if t.get("type") == "page"]
                        if pages:
                            return process, pages[0]["webSocketDebuggerUrl"]
                    except OSError:
                        pass
                    time.sleep(0.1)
        if process.poll() is not None:
            raise SystemExit("console browser test: chromium exited at start")
        time.sleep(0.1)
    process.kill()
    raise SystemExit("console browser test: chromium did not open its DevTools port")


def chart_checks(page, where):
    """Counts are bars with whole-number ticks, and no axis label is cut off at a chart's border."""
    charts = page.evaluate("""[...document.querySelectorAll('.chart')].map(c => {
        const svg = c.querySelector('svg'), width = svg.viewBox.baseVal.width;
        const labels = [...svg.querySelectorAll('text.axis')];
        return { title: c.querySelector('h2').textContent, bars: c.dataset.kind === 'bars',
                 ticks: labels.filter(t => t.getAttribute('text-anchor') === 'end' && +t.getAttribute('x') < 40).map(t => t.textContent),
                 clipped: labels.filter(t => { const b = t.getBBox(); return b.x < -0.5 || b.x + b.width > width + 0.5; }).map(t => t.textContent) };
    })""")
    checks = [(f"{where}: some chart draws bars", str(any(c["bars"] for c in charts)), "True")]
    for c in charts:
        checks.append((f"{where} {c['title']!r}: no label cut off", json.dumps(c["clipped"]), "[]"))
        if c["bars"]:
            whole = all(t.isdigit() for t in c["ticks"]) and len(c["ticks"]) >= 2
            checks.append((f"{where} {c['title']!r}: whole-number ticks {c['ticks']}", str(whole), "True"))
    return checks


def dashboard_checks(page, base, shot):
    """The dev dashboard: the new-customer field validates (its pattern compiles in Chromium), it
    links the console, and a customer's timeline lists each notification once."""
    page.call("Page.navigate", url=base + "/")
    page.wait_for("document.querySelectorAll('#rows tr[data-customer]').length > 0", "the dashboard's customers")
    checks = []
    validity = page.evaluate("""(() => { const i = document.getElementById('new-name'), out = {};
        for (const v of ['zoe-1.b_c@x', 'not valid!', 'a b']) { i.value = v; out[v] = i.checkValidity(); }
        i.value = ''; return out; })()""")
    checks.append(("dashboard name field validates", json.dumps(validity, sort_keys=True),
                   json.dumps({"a b": False, "not valid!": False, "zoe-1.b_c@x": True}, sort_keys=True)))
    checks.append(("dashboard links the console", str(page.evaluate("!!document.querySelector('a[href=\"/console\"]')")), "True"))
    page.evaluate("document.querySelector('#rows tr[data-customer=\"alice\"]').click(); true")
    page.wait_for("document.querySelectorAll('#d-timeline tr').length > 0", "alice's timeline")
    uuids = page.evaluate("[...document.querySelectorAll('#d-timeline tr[data-notification]')].map(r => r.dataset.notification)")
    checks.append(("dashboard timeline lists each notification once", str(len(uuids) > 0 and len(uuids) == len(set(uuids))), "True"))
    shot("dashboard")
    return checks


def order_id_of(base, key, who):
    """The order id of `who`'s first transaction, as the simulator bills it (Simulator.orderId)."""
    request = urllib.request.Request(f"{base}/v1/customers/{who}", headers={"Authorization": f"Bearer {key}"})
    answer = json.load(urllib.request.urlopen(request, timeout=10))
    ids = sorted(int(e["transactionId"]) for e in answer["entitlements"].values() if e.get("transactionId", "").isdigit())
    number, digits = ids[0] % 2_821_109_907_456, ""
    while True:
        number, rest = divmod(number, 36)
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[rest] + digits
        if number == 0:
            return "M" + digits


def offering_checks(page, text, shot):
    """The offerings pages with the dev (admin) key: create one through the form, see its packages
    and metadata, make it current, have its delete refused (it is current), replace it, list it."""
    checks = []
    page.evaluate("location.hash = '#offerings'; true")
    page.wait_for("document.body.dataset.ready === 'offerings'", "the offerings page")
    checks.append(("no offering yet says what to do", str("create one" in text("#offerings-empty")), "True"))
    document = {"description": "Monthly and yearly", "metadata": {"title": "Go Pro"},
                "packages": [{"id": "$monthly", "products": {"appStore": "pro.monthly"}},
                             {"id": "$annual", "products": {"appStore": "pro.yearly"}}]}
    page.evaluate("document.getElementById('offering-id').value = 'default';"
                  f"document.getElementById('offering-json').value = {json.dumps(json.dumps(document))};"
                  "document.getElementById('offering-form').requestSubmit(); true")
    page.wait_for("document.body.dataset.ready === 'offerings' && !!document.getElementById('offering-packages')", "the new offering")
    shot("offering")
    packages = page.evaluate("[...document.querySelectorAll('#offering-packages td:first-child')].map(td => td.textContent)")
    checks.append(("the offering's packages in order", json.dumps(packages), json.dumps(["$monthly", "$annual"])))
    checks.append(("the offering's metadata", str("Go Pro" in text("#offering-metadata")), "True"))
    checks.append(("a new offering is not current", str("Not current" in text("#offering-version")), "True"))
    page.evaluate("document.getElementById('offering-make-current').click(); true")
    page.wait_for("document.body.dataset.ready === 'offerings' && !document.getElementById('offering-make-current')"
                  " && !!document.getElementById('offering-version')", "the offering made current")
    checks.append(("made current", str("This is the current offering" in text("#offering-version")), "True"))
    checks.append(("the current offering cannot be deleted", str(page.evaluate("document.getElementById('offering-delete').disabled")), "True"))
    checks.append(("and the page says why", str("current offering" in text("#offering-delete-note")), "True"))
    replaced = dict(document, packages=document["packages"][:1])
    page.evaluate(f"document.getElementById('offering-json').value = {json.dumps(json.dumps(replaced))};"
                  "document.getElementById('offering-form').requestSubmit(); true")
    page.wait_for("document.body.dataset.ready === 'offerings' && document.querySelectorAll('#offering-packages td').length === 3",
                  "the replaced offering")
    checks.append(("a replacement is a new version", str(text("#offering-version").startswith("Version 3,")), "True"))
    history = page.evaluate("[...document.querySelectorAll('#offering-history tr')].slice(1).map(r => r.children[0].textContent + ' ' + r.children[1].textContent)")
    checks.append(("the version history, newest first", json.dumps(history),
                   json.dumps(["3 created or replaced", "2 made current", "1 created or replaced"])))
    page.evaluate("location.hash = '#offerings'; true")
    page.wait_for("document.body.dataset.ready === 'offerings' && !!document.getElementById('offering-list')", "the offering list")
    shot("offerings")
    listed = page.evaluate("[...document.querySelectorAll('#offering-list a')].map(a => a.textContent)")
    checks.append(("the list shows the offering", json.dumps(listed), json.dumps(["default"])))
    checks.append(("the list marks the current one", text("#offering-list strong"), "current"))
    # Another one, created from the list and deleted from its page.
    page.evaluate("document.getElementById('offering-id').value = 'extra';"
                  f"document.getElementById('offering-json').value = {json.dumps(json.dumps(replaced))};"
                  "document.getElementById('offering-form').requestSubmit(); true")
    page.wait_for("document.body.dataset.ready === 'offerings' && location.hash === '#offerings/extra'"
                  " && !!document.getElementById('offering-delete')", "the second offering")
    page.evaluate("window.confirm = () => true; document.getElementById('offering-delete').click(); true")
    page.wait_for("document.body.dataset.ready === 'offerings' && location.hash === '#offerings'"
                  " && !!document.getElementById('offering-list')", "the list after the delete")
    listed = page.evaluate("[...document.querySelectorAll('#offering-list a')].map(a => a.textContent)")
    checks.append(("a deleted offering leaves the list", json.dumps(listed), json.dumps(["default"])))
    return checks


def experiment_checks(page, base, key, text, shot):
    """The experiments pages with the dev (admin) key: a refused create shows the server's problem,
    then create -> pause -> change a weight -> end, each through the page's buttons and forms."""
    checks = []
    # A second offering to compare with the `default` one offering_checks left.
    body = json.dumps({"packages": [{"id": "$monthly", "products": {"appStore": "pro.yearly"}}]}).encode()
    request = urllib.request.Request(f"{base}/v1/offerings/cheaper", data=body, method="PUT",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    page.evaluate("location.hash = '#experiments'; true")
    page.wait_for("document.body.dataset.ready === 'experiments' && !!document.getElementById('experiment-form')", "the experiments page")
    checks.append(("no experiment yet says what to do", str("create one below" in text("#experiments-empty")), "True"))
    offered = page.evaluate("[...document.querySelectorAll('.variant-offering')[0].options].map(o => o.value)")
    checks.append(("variants choose among the offerings", json.dumps(sorted(offered)), json.dumps(["cheaper", "default"])))
    fill = ("document.querySelectorAll('.variant-offering')[0].value = 'default';"
            "document.querySelectorAll('.variant-offering')[1].value = 'cheaper';"
            "document.getElementById('audience-storefronts').value = 'USA, FRA';"
            "document.getElementById('audience-state-new').checked = true;"
            "document.getElementById('audience-attributes').value = 'plan=free';"
            "document.getElementById('experiment-status').value = 'running';")
    # The form checks the weights itself; the id's rule is the server's.
    page.evaluate(fill + "document.getElementById('experiment-id').value = 'spring prices!';"
                  "document.getElementById('experiment-form').requestSubmit(); true")
    page.wait_for("document.getElementById('experiment-error').textContent !== ''", "the refused create")
    page.allowed_errors.append("status of 400 (Bad Request)")
    checks.append(("a refused create shows the server's problem", text("#experiment-error").split(":")[0], "INVALID_EXPERIMENT"))
    page.evaluate(fill + "document.getElementById('experiment-id').value = 'spring';"
                  "document.querySelectorAll('.variant-weight')[0].value = '3';"
                  "document.getElementById('experiment-form').requestSubmit(); true")
    page.wait_for("document.body.dataset.ready === 'experiments' && location.hash === '#experiments/spring'"
                  " && !!document.getElementById('experiment-state')", "the new experiment")
    shot("experiment")
    checks.append(("created running", text("#experiment-state"), "running"))
    checks.append(("its audience in words", text("#experiment-audience"),
                   "Audience: Storefronts: USA, FRA · States: new · Attribute plan = free"))
    checks.append(("its variants and shares", str("0: default (weight 3, 75.0 %)" in text("#experiment-summary")), "True"))
    checks.append(("no enrolment yet: not enough data", str("Not enough data" in text("#experiment-not-enough")), "True"))
    rows = page.evaluate("[...document.querySelectorAll('#experiment-7 tr')].slice(1).map(r => r.children[0].textContent)")
    checks.append(("results per variant", json.dumps(rows), json.dumps(["0: default (3)", "1: cheaper (1)"])))
    page.evaluate("document.getElementById('experiment-pause').click(); true")
    page.wait_for("document.body.dataset.ready === 'experiments' && !!document.getElementById('experiment-resume')", "the paused experiment")
    checks.append(("paused", text("#experiment-state"), "paused"))
    page.evaluate("document.querySelectorAll('.variant-weight')[1].value = '2';"
                  "document.getElementById('experiment-edit').requestSubmit(); true")
    page.wait_for("document.body.dataset.ready === 'experiments' && document.getElementById('experiment-summary')?.textContent.includes('weight 2')",
                  "the new weights")
    checks.append(("a paused experiment's weight changed", str("1: cheaper (weight 2, 40.0 %)" in text("#experiment-summary")), "True"))
    checks.append(("and it stays paused", text("#experiment-state"), "paused"))
    page.evaluate("window.confirm = () => true; document.getElementById('experiment-end').click(); true")
    page.wait_for("document.body.dataset.ready === 'experiments' && !!document.getElementById('experiment-ended')", "the ended experiment")
    shot("experiment-ended")
    checks.append(("ended", text("#experiment-state"), "ended"))
    checks.append(("an ended experiment offers no change", str(page.evaluate(
        "!document.getElementById('experiment-pause') && !document.getElementById('experiment-resume') && !document.getElementById('experiment-edit')")), "True"))
    page.evaluate("location.hash = '#experiments'; true")
    page.wait_for("document.body.dataset.ready === 'experiments' && !!document.getElementById('experiments')", "the experiment list")
    listed = page.evaluate("[...document.querySelectorAll('#experiments tr')].slice(1).map(r => r.children[0].textContent + ' ' + r.children[1].textContent)")
    checks.append(("the list shows it ended", json.dumps(listed), json.dumps(["spring ended"])))
    return checks


def main():
    base, key, expected_json, shots = sys.argv[1:5]
    expected = json.loads(expected_json)
    os.makedirs(shots, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="entitled-chromium-")
    process, ws = start_browser(profile)
    try:
        page = DevTools(ws)
        for domain in ("Runtime", "Log", "Page"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1280, height=1000, deviceScaleFactor=1, mobile=False)

        def shot(name):
            data = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
            with open(os.path.join(shots, f"{name}.png"), "wb") as f:
                f.write(base64.b64decode(data))

        def text(selector):
            return page.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")

        page.call("Page.navigate", url=base + "/console")
        page.wait_for("document.readyState === 'complete' && !document.getElementById('login').hidden", "the log-in form")
        shot("login")
        page.evaluate(
            f"document.getElementById('login-key').value = {json.dumps(key)};"
            "document.getElementById('login-form').requestSubmit(); true")
        page.wait_for("document.body.dataset.ready === 'overview'", "the overview")
        # Two animation frames: the charts are laid out and painted before the screenshot.
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
        shot("overview")
        checks = []
        for card, value in expected["overview"].items():
            got = page.evaluate(f"(document.getElementById({json.dumps(card)}) || {{}}).dataset?.value ?? null")
            checks.append((f"overview {card}", str(got), str(value)))
        charts = page.evaluate("document.querySelectorAll('.chart svg path').length")
        checks.append(("overview chart lines drawn", str(charts > 0), "True"))
        hows = page.evaluate("[...document.querySelectorAll('.chart .how')].every(p => p.textContent.length > 20)")
        checks.append(("every chart says how it is computed", str(hows), "True"))
        checks += chart_checks(page, "overview")
        windows = page.evaluate("[...document.querySelectorAll('.card')].every(c => (c.querySelector('.w') || {}).textContent?.length > 10)")
        checks.append(("every card says over which window it counts", str(windows), "True"))
        checks.append(("revenue total card", text("#card-revenue"), expected["revenue"]))
        links = page.evaluate("['card-mrr', 'card-active', 'card-conversions'].map(id => "
                              "document.getElementById(id).parentElement.querySelector('a.more')?.getAttribute('href'))")
        checks.append(("overview cards link their charts", json.dumps(links), json.dumps(["#charts/revenue", "#charts/subscribers", "#charts/conversion"])))
        # The dev server hears from Sandbox only: Production is empty and says what to do next.
        page.evaluate("const s = document.querySelectorAll('.controls select')[2]; s.value = 'Production'; s.dispatchEvent(new Event('change')); true")
        page.wait_for("document.body.dataset.ready === 'overview' && !!document.getElementById('overview-empty')", "the empty overview")
        checks.append(("an empty overview says where notifications go", str("/v1/apple/notifications" in text("#overview-empty")), "True"))
        shot("overview-empty")

        page.evaluate(f"location.hash = '#customers/' + encodeURIComponent({json.dumps(expected['search'])}); true")
        page.wait_for("document.body.dataset.ready === 'customers'", "the customer list")
        shot("customers")
        listed = page.evaluate("[...document.querySelectorAll('#customer-list a')].map(a => a.textContent)")
        checks.append(("customers found", json.dumps(listed), json.dumps(expected["customers"])))
        page.evaluate("location.hash = '#customers/nobody-by-this-name'; true")
        page.wait_for("document.body.dataset.ready === 'customers' && !!document.getElementById('customers-empty')", "no customer found")
        checks.append(("no match says how to search", str("appAccountToken" in text("#customers-empty")), "True"))

        page.evaluate(f"location.hash = '#customer/' + encodeURIComponent({json.dumps(expected['customer'])}); true")
        page.wait_for("document.body.dataset.ready === 'customer'", "the customer page")
        events = page.evaluate("[...document.querySelectorAll('#timeline .event-text')].map(e => e.textContent)")
        for want in expected["timeline"]:
            checks.append((f"timeline has {want!r}", str(want in events), "True"))
        # The raw facts of the purchase's row. Not the first row: the subscription's backfill job
        # (the ledger's first sight of it, fetched from the simulator's Server API) may have run
        # by now, and its newer rows come first; a renewal info has no transactionId.
        row = f"[...document.querySelectorAll('#timeline tr.event')].find(r => r.querySelector('.event-text').textContent === {json.dumps(expected['timeline'][0])})"
        page.evaluate(f"{row}?.querySelector('button').click(); true")
        raw = page.evaluate(f"(p => !!p && !p.hidden && p.textContent.includes('transactionId'))({row}?.querySelector('pre'))")
        checks.append(("raw facts one click away", str(raw), "True"))
        if not raw:
            # What the timeline held, to tell a missing row from a row without the facts.
            rows = page.evaluate(
                "JSON.stringify([...document.querySelectorAll('#timeline tr.event')].map(r => "
                "[r.children[0].textContent, r.children[2].textContent, r.querySelector('pre').textContent.slice(0, 300)]))")
            print(f"console browser test: the timeline's rows: {rows}", file=sys.stderr)
        deliveries = page.evaluate("document.getElementById('deliveries').textContent")
        checks.append(("customer shows its webhook deliveries", str("No webhook delivery for this customer." in deliveries), "True"))
        shot("customer")

        # Order-id search through the simulator's fake App Store Server API (Look Up Order ID).
        who = expected["orderCustomer"]
        order_id = order_id_of(base, key, who)
        page.evaluate(f"location.hash = '#orders/' + encodeURIComponent({json.dumps(order_id)}); true")
        page.wait_for("document.body.dataset.ready === 'orders'", "the order search")
        shot("order-search")
        checks.append(("order found at Apple", text("#order-status"), "valid order"))
        owners = page.evaluate("[...document.querySelectorAll('#order-transactions a')].map(a => a.textContent)")
        checks.append(("order's customer", json.dumps(owners), json.dumps([who])))

        # A support action: extend the customer's subscription, then look up refunds.
        page.evaluate(f"location.hash = '#customer/' + encodeURIComponent({json.dumps(who)}); true")
        page.wait_for("document.body.dataset.ready === 'customer'", "the customer page")
        checks.append(("support actions offered to an admin key", str(page.evaluate("!document.getElementById('extend').disabled")), "True"))
        page.evaluate("document.getElementById('extend-days').value = '3'; document.getElementById('extend').click(); true")
        page.wait_for("!!(document.getElementById('extend-done') || document.querySelector('#support-result .error'))", "the extension")
        checks.append(("extension applied", str(page.evaluate("!!document.getElementById('extend-done')")), "True"))
        shot("support-extend")
        page.evaluate("document.getElementById('refunds').click(); true")
        page.wait_for("!!(document.getElementById('refunds-none') || document.getElementById('refund-list') || "
                      "document.querySelector('#support-result .error'))", "the refund lookup")
        checks.append(("refund lookup answered", str(page.evaluate("!document.querySelector('#support-result .error')")), "True"))
        page.evaluate("location.hash = '#health'; true")
        page.wait_for("document.body.dataset.ready === 'health'", "the health page")
        page.evaluate(f"location.hash = '#customer/' + encodeURIComponent({json.dumps(who)}); true")
        page.wait_for("document.body.dataset.ready === 'customer'", "the customer page")
        recorded = page.evaluate("[...document.querySelectorAll('#support-actions tr')].slice(1)"
                                 ".map(r => r.children[1].textContent + ' ' + r.children[4].textContent)")
        checks.append(("support actions recorded", json.dumps(recorded), json.dumps(["refund_lookup OK", "extend OK", "order_lookup OK"])))
        events = page.evaluate("[...document.querySelectorAll('#timeline .event-text')].map(e => e.textContent)")
        checks.append(("the extension's notification is in the timeline", str(any("extended" in e for e in events)), "True"))
        shot("support")

        # Grant an entitlement (admin key): the answer then shows it, from the grant.
        grantee, entitlement = expected["grant"]
        page.evaluate(f"location.hash = '#customer/' + encodeURIComponent({json.dumps(grantee)}); true")
        page.wait_for("document.body.dataset.ready === 'customer'", "the customer page")
        offered = page.evaluate("[...document.querySelectorAll('#grant-entitlement option')].map(o => o.value)")
        checks.append(("grant offers the configured entitlements", json.dumps(offered), json.dumps(expected["entitlements"])))
        page.evaluate(f"document.getElementById('grant-entitlement').value = {json.dumps(entitlement)};"
                      "document.getElementById('grant-days').value = '5'; document.getElementById('grant-reason').value = 'browser test';"
                      "document.getElementById('grant-button').click(); true")
        page.wait_for("!!(document.getElementById('grant-done') || document.getElementById('grant-error'))", "the grant")
        checks.append(("grant applied", text("#grant-done")[:8], "Granted "))
        rows = page.evaluate("[...document.querySelectorAll('#answer-entitlements tr')].map(r => [...r.children].map(c => c.textContent).join('|'))")
        checks.append(("the answer shows the granted entitlement", str(any(r.startswith(entitlement + "|active") for r in rows)), "True"))
        shot("grant")

        page.evaluate("location.hash = '#health'; true")
        page.wait_for("document.body.dataset.ready === 'health'", "the health page")
        shot("health")
        checks += chart_checks(page, "health")
        checks.append(("health draws the hours as bars", str(page.evaluate("document.querySelectorAll('.chart rect.bar').length > 0")), "True"))
        rejected = page.evaluate("[...document.querySelectorAll('.legend span')].filter(s => s.textContent === 'Rejected')"
                                 ".map(s => getComputedStyle(s.querySelector('i')).backgroundColor)")
        checks.append(("rejected is drawn red, not green", json.dumps(rejected), json.dumps(["rgb(220, 38, 38)"])))
        ingested = page.evaluate("Number(document.getElementById('health-ingested').dataset.value)")
        checks.append(("health counts the ingest", str(ingested >= expected["minIngested"]), "True"))
        webhooks = page.evaluate("document.getElementById('webhooks').textContent")
        checks.append(("health shows the webhook status", str("No webhook endpoint is configured." in webhooks), "True"))
        checks.append(("no webhook says where to read how", str("docs/operations.md#webhooks" in webhooks), "True"))
        apps = page.evaluate("[...document.querySelectorAll('#last-notifications td:first-child')].map(t => t.textContent)")
        checks.append(("last notification per app", str(expected["bundleId"] in apps), "True"))

        page.evaluate("location.hash = '#retention'; true")
        page.wait_for("document.body.dataset.ready === 'retention'", "the retention page")
        shot("retention")
        retention = page.evaluate("document.getElementById('retention-empty')?.textContent || ''")
        checks.append(("retention without requests says how to start", str("/v1/apple/retention" in retention), "True"))

        # The chart pages, in Sandbox (where the dev server's history is): definitions, CSV, heat maps.
        page.evaluate("location.hash = '#charts/subscribers'; true")
        page.wait_for("document.body.dataset.ready === 'charts'", "the subscribers charts")
        page.evaluate("(() => { const s = document.querySelectorAll('.controls select')[3]; s.value = 'Sandbox'; "
                      "s.dispatchEvent(new Event('change')); return true; })()")
        page.wait_for("document.body.dataset.ready === 'charts' && document.querySelectorAll('.controls select')[3].value === 'Sandbox'", "the Sandbox charts")
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
        shot("charts-subscribers")
        checks += chart_checks(page, "charts")
        actives = page.evaluate("document.querySelectorAll('#panel-actives svg path').length")
        checks.append(("the actives chart draws a line", str(actives > 0), "True"))
        described = page.evaluate("[...document.querySelectorAll('.chart')].map(c => c.querySelector('.how').textContent.length > 40 && !!c.querySelector('button.csv'))")
        checks.append(("every chart has its definition and a CSV download", json.dumps(described), json.dumps([True] * 4)))
        page.evaluate("location.hash = '#charts/cohorts'; true")
        page.wait_for("document.body.dataset.ready === 'charts' && !!document.getElementById('panel-subscription_retention')", "the cohort charts")
        shot("charts-cohorts")
        cohorts = page.evaluate("document.querySelectorAll('#chart-subscription_retention tr').length")
        checks.append(("retention is a cohort table", str(cohorts > 1), "True"))
        shaded = page.evaluate("[...document.querySelectorAll('#chart-subscription_retention td[data-value]')].some(td => td.style.backgroundColor !== '')")
        checks.append(("retention rates are shaded (a heat map)", str(shaded), "True"))

        checks += offering_checks(page, text, shot)
        checks += experiment_checks(page, base, key, text, shot)
        checks += dashboard_checks(page, base, shot)

        failed = [f"{name}: got {got}, want {want}" for name, got, want in checks if got != want]
        errors = page.errors()
        for line in failed + errors:
            print("console browser test: " + line, file=sys.stderr)
        print(f"console browser test: {len(checks)} checks, {len(failed)} failed, {len(errors)} browser errors; "
              f"screenshots in {shots}")
        return 1 if failed or errors else 0
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
