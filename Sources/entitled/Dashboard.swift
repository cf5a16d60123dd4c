import AppStoreSimulator
import EntitledServer
import Entitlements
import Foundation
import HTTPServer

/// The `entitled dev` dashboard: one page, refreshed every two seconds from `/dev/customers`.
enum Dashboard {
    struct Row: Encodable {
        var appUserId: String
        var state: String
        var entitlements: [Item]
        struct Item: Encodable {
            var id: String
            var status: String
            var active: Bool
            var productId: String
            var expiresAt: String?
            var willRenew: Bool?
        }
    }

    struct Page: Encodable {
        var serverTime: String
        var customers: [Row]
    }

    static func register(
        on router: inout Router, ledger: StorageLedger, policy: Policy, clock: any ServerClock, simulator: SimulatorBox
    ) {
        router.add(.get, "/", .inline { _ in
            Response(status: 200, headers: ["Content-Type": "text/html; charset=utf-8"], body: Array(html.utf8))
        })
        router.get("/dev/customers") { _ in
            guard let simulator = simulator.simulator else { return try .json(Page(serverTime: "", customers: [])) }
            let now = clock.nowMilliseconds()
            let ids = await simulator.snapshot().customers.map(\.id)
            var rows: [Row] = []
            for id in ids {
                let context = EvaluationContext(policy: policy, environment: .sandbox, now: now)
                guard let snapshot = try? await ledger.customer(appUserId: id, context: context) else { continue }
                rows.append(
                    Row(
                        appUserId: id, state: snapshot.state.customerClass.rawValue,
                        entitlements: snapshot.state.entitlements.map {
                            Row.Item(
                                id: $0.id, status: $0.status.rawValue, active: $0.active, productId: $0.productId,
                                expiresAt: $0.expiresAt.map { ISO8601.format(milliseconds: $0) }, willRenew: $0.willRenew)
                        }))
            }
            return try .json(Page(serverTime: ISO8601.format(milliseconds: now), customers: rows))
        }
    }

    static let html = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Entitled — dev</title>
        <style>
          body { font: 14px system-ui, sans-serif; margin: 2rem; color: #1d1d1f; }
          table { border-collapse: collapse; min-width: 40rem; }
          th, td { text-align: left; padding: .35rem .8rem; border-bottom: 1px solid #ddd; }
          .active { color: #1a7f37; } .gracePeriod, .billingRetry { color: #9a6700; }
          .expired, .revoked, .refunded { color: #cf222e; } .muted { color: #6e6e73; }
        </style></head>
        <body>
        <h1>Entitled <span class="muted">dev</span></h1>
        <p class="muted">Virtual time: <span id="time">…</span> — the simulator advances one day every few seconds.</p>
        <table><thead><tr><th>Customer</th><th>State</th><th>Entitlement</th><th>Status</th><th>Product</th><th>Expires</th><th>Renews</th></tr></thead>
        <tbody id="rows"><tr><td colspan="7" class="muted">loading…</td></tr></tbody></table>
        <script>
        function cell(text, cls) { const td = document.createElement('td'); td.textContent = text; if (cls) td.className = cls; return td; }
        async function refresh() {
          const page = await (await fetch('/dev/customers')).json();
          document.getElementById('time').textContent = page.serverTime;
          const body = document.getElementById('rows'); body.replaceChildren();
          for (const c of page.customers) {
            const items = c.entitlements.length ? c.entitlements : [null];
            for (const e of items) {
              const tr = document.createElement('tr');
              tr.append(cell(c.appUserId), cell(c.state, c.state === 'active' ? 'active' : 'muted'));
              tr.append(cell(e ? e.id : '—'), cell(e ? e.status : '—', e ? e.status : ''), cell(e ? e.productId : '—'),
                        cell(e && e.expiresAt ? e.expiresAt : '—'), cell(e && e.willRenew != null ? (e.willRenew ? 'yes' : 'no') : '—'));
              body.append(tr);
            }
          }
        }
        refresh(); setInterval(refresh, 2000);
        </script>
        </body></html>
        """
}
