@testable import EntitledTestSupport
import Foundation
import Testing

/// `entitled dev`'s dashboard JSON, against the real binary: started paused (`--day-every 0`) so
/// that every test moves virtual time itself and sees exactly what it caused.
@Suite struct DevDashboardTests {
    static let key = "dev-key-entitled-local-only"
    static let day: Int64 = 86_400_000

    /// A paused `entitled dev` with the seeded scenario.
    static func start() async throws -> ServeProcess {
        try await ServeProcess.start { folder in
            ["dev", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--data", folder.path, "--day-every", "0"]
        }
    }

    static func dev(
        _ port: Int, _ method: String, _ path: String, _ body: String? = nil, timeoutSeconds: Int = 10
    ) async throws -> Loopback.Reply {
        var headers = ["Authorization": "Bearer \(key)"]
        if body != nil { headers["Content-Type"] = "application/json" }
        return try await Loopback.send(
            port: port, method, path, headers: headers, body: Array((body ?? "").utf8), timeoutSeconds: timeoutSeconds)
    }

    static func samples(_ reply: Loopback.Reply) -> [[String: Any]] { reply.json["samples"] as? [[String: Any]] ?? [] }

    static func int(_ value: Any?) -> Int64 { (value as? NSNumber)?.int64Value ?? -1 }

    @Test func metricsGainOneSamplePerVirtualDayAsTimeAdvances() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        let before = try await Self.dev(dev.port, "GET", "/dev/metrics")
        #expect(before.status == 200)
        let first = Self.samples(before)
        #expect(first.map { Self.int($0["day"]) } == [0])
        // Six App Store customers and Gina, who subscribed on Google Play.
        #expect(Self.int(before.json["customers"]) == 7)
        #expect(Self.int((before.json["states"] as? [String: Any])?["active"]) == 7)
        let seeded = Self.int((before.json["notifications"] as? [String: Any])?["sent"])
        #expect(seeded >= 7)

        let advanced = try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 3}"#)
        #expect(advanced.status == 200)
        #expect(Self.int(advanced.json["now"]) == Self.int(before.json["now"]) + 3 * Self.day)
        let three = Self.samples(try await Self.dev(dev.port, "GET", "/dev/metrics"))
        #expect(three.map { Self.int($0["day"]) } == [0, 1, 2, 3])

        // A month: monthly renewals, Erin's voluntary expiry, Frank's scheduled refund on day 9.
        #expect(try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"by": "P1M"}"#).status == 200)
        let after = try await Self.dev(dev.port, "GET", "/dev/metrics")
        let month = Self.samples(after)
        #expect(month.count >= 3 + 28)
        #expect(month.map { Self.int($0["day"]) } == Array(0...Int64(month.count - 1)))
        let refunded = month.map { Self.int(($0["states"] as? [String: Any])?["refunded"]) }
        #expect(refunded[8] == 0 && refunded[9] == 1 && refunded.last == 1)
        #expect(Self.int((after.json["states"] as? [String: Any])?["expired"]) >= 1)
        // Per-day counts add up to the cumulative total, and the renewals show on their day.
        let sent = Self.int((after.json["notifications"] as? [String: Any])?["sent"])
        #expect(sent > seeded)
        #expect(month.map { Self.int($0["notifications"]) }.reduce(0, +) == sent)
        #expect(month.dropFirst().contains { Self.int($0["notifications"]) > 0 })
        #expect(Self.int((after.json["notifications"] as? [String: Any])?["failed"]) == 0)
    }

    @Test func theRingOfSamplesIsBounded() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        // 420 simulated days are one long request (11–21 s on a loaded 2-core machine): the read
        // timeout only guards against a hang, so it is generous here rather than racing the load.
        let advanced = try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 420}"#, timeoutSeconds: 120)
        #expect(advanced.status == 200)
        let metrics = try await Self.dev(dev.port, "GET", "/dev/metrics")
        let capacity = Self.int(metrics.json["capacity"])
        let days = Self.samples(metrics).map { Self.int($0["day"]) }
        #expect(capacity == 400)
        #expect(days == Array((421 - capacity)...420))
        #expect(try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"by": "P11Y"}"#).status == 400)
    }

    @Test func pauseResumeAndSpeedDriveTheAutoAdvance() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        let paused = try await Self.dev(dev.port, "GET", "/dev/clock")
        #expect(paused.json["running"] as? Bool == false)
        // Paused, only steps move the clock: one day is exactly one day.
        let stepped = try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 1}"#)
        #expect(Self.int(stepped.json["now"]) == Self.int(paused.json["now"]) + Self.day)

        let resumed = try await Self.dev(dev.port, "POST", "/dev/clock", #"{"running": true, "dayEvery": 0.05}"#)
        #expect(resumed.json["running"] as? Bool == true)
        #expect(resumed.json["dayEvery"] as? Double == 0.05)
        // Running, the clock moves by itself: three more days come, waited for with a deadline.
        let moved = try await eventually {
            Self.int(try await Self.dev(dev.port, "GET", "/dev/clock").json["day"]) >= 4
        }
        #expect(moved)

        let stopped = try await Self.dev(dev.port, "POST", "/dev/clock", #"{"running": false}"#)
        #expect(stopped.json["running"] as? Bool == false)
        // A day already under way finishes before a step (requests take turns); nothing starts after
        // the pause, so from here each one-day step moves the clock by exactly one day.
        let first = Self.int(try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 1}"#).json["now"])
        let second = Self.int(try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 1}"#).json["now"])
        #expect(second == first + Self.day)
        #expect(Self.int(try await Self.dev(dev.port, "GET", "/dev/clock").json["now"]) == second)

        let invalid = try await Self.dev(dev.port, "POST", "/dev/clock", #"{"dayEvery": -1}"#)
        #expect(invalid.status == 400)
    }

    @Test func theDemoCatalogGrantsWhatTheExampleConfigurationGrants() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        func entitlements(_ id: String) async throws -> [String: String] {
            let reply = try await Loopback.send(
                port: dev.port, "GET", "/v1/customers/\(id)?environment=Sandbox", headers: ["Authorization": "Bearer \(Self.key)"])
            let all = reply.json["entitlements"] as? [String: [String: Any]] ?? [:]
            return all.compactMapValues { $0["productId"] as? String }
        }
        // As examples/entitled.json: the pro plans and the lifetime unlock grant pro.
        #expect(try await entitlements("alice") == ["pro": "pro.monthly"])
        #expect(try await entitlements("bob") == ["pro": "pro.yearly"])
        #expect(try await entitlements("dave") == ["pro": "lifetime"])
        #expect(try await entitlements("erin") == ["basic": "basic.monthly"])
    }

    @Test func actionsPostedThroughDevActionsChangeTheServersAnswer() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        func answer(_ id: String) async throws -> Loopback.Reply {
            try await Loopback.send(
                port: dev.port, "GET", "/v1/customers/\(id)?environment=Sandbox",
                headers: ["Authorization": "Bearer \(Self.key)"])
        }
        #expect(try await answer("alice").entitlement("pro")?["status"] as? String == "active")

        let refund = try await Self.dev(
            dev.port, "POST", "/dev/actions", #"{"action": "refund", "customer": "alice", "product": "pro.monthly"}"#)
        #expect(refund.status == 200)
        let sent = refund.json["notifications"] as? [[String: Any]] ?? []
        #expect(sent.map { $0["notificationType"] as? String } == ["REFUND"])
        let alice = try await answer("alice").entitlement("pro")
        #expect(alice?["status"] as? String == "refunded")
        #expect(alice?["active"] as? Bool == false)

        let cancel = try await Self.dev(
            dev.port, "POST", "/dev/actions",
            #"{"action": "autoRenew", "customer": "bob", "product": "pro.yearly", "enabled": false}"#)
        #expect(cancel.status == 200)
        #expect(try await answer("bob").entitlement("pro")?["willRenew"] as? Bool == false)

        // A new customer's purchase carries their server token without the page knowing it.
        #expect(try await Self.dev(dev.port, "POST", "/dev/actions", #"{"action": "customer", "customer": "zoe"}"#).status == 200)
        let buy = try await Self.dev(
            dev.port, "POST", "/dev/actions", #"{"action": "purchase", "customer": "zoe", "product": "pro.monthly"}"#)
        #expect(buy.status == 200)
        let zoe = try await answer("zoe")
        #expect(zoe.entitlement("pro")?["productId"] as? String == "pro.monthly")
        #expect(zoe.entitlement("pro")?["active"] as? Bool == true)
        let rows = try await Self.dev(dev.port, "GET", "/dev/customers").json["customers"] as? [[String: Any]] ?? []
        #expect(rows.contains { $0["appUserId"] as? String == "zoe" && $0["status"] as? String == "active" })

        let unknown = try await Self.dev(
            dev.port, "POST", "/dev/actions", #"{"action": "purchase", "customer": "nobody", "product": "pro.monthly"}"#)
        #expect(unknown.status == 404)
        #expect(unknown.code == "UNKNOWN_CUSTOMER")
        #expect(try await Self.dev(dev.port, "POST", "/dev/actions", #"{"action": "nonsense"}"#).status == 400)
    }

    /// `entitled dev` runs in Sandbox: a plain `GET /v1/customers/{id}` (no `?environment=`) must
    /// answer what the dashboard shows, not the empty Production answer.
    @Test func thePlainAnswerIsWhatTheDashboardShows() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        func plain(_ id: String) async throws -> Loopback.Reply {
            try await Loopback.send(port: dev.port, "GET", "/v1/customers/\(id)", headers: ["Authorization": "Bearer \(Self.key)"])
        }
        #expect(try await Self.dev(dev.port, "POST", "/dev/actions", #"{"action": "customer", "customer": "zoe"}"#).status == 200)
        let buy = try await Self.dev(
            dev.port, "POST", "/dev/actions", #"{"action": "purchase", "customer": "zoe", "product": "pro.monthly"}"#)
        #expect(buy.status == 200)
        let zoe = try await plain("zoe")
        #expect(zoe.json["state"] as? String == "active")
        #expect(zoe.entitlement("pro")?["active"] as? Bool == true)
        #expect(zoe.entitlement("pro")?["environment"] as? String == "Sandbox")
        let subscriptions = zoe.json["subscriptions"] as? [[String: Any]] ?? []
        #expect(subscriptions.map { $0["environment"] as? String } == ["Sandbox"])

        let rows = try await Self.dev(dev.port, "GET", "/dev/customers").json["customers"] as? [[String: Any]] ?? []
        #expect(rows.count >= 2)
        for row in rows {
            let id = try #require(row["appUserId"] as? String)
            let answer = try await plain(id)
            #expect(answer.json["state"] as? String == row["state"] as? String, "\(id)")
            let shown = (row["entitlements"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0["status"] as? String ?? "") }
            let answered = (answer.json["entitlements"] as? [String: [String: Any]] ?? [:]).map { ($0.key, $0.value["status"] as? String ?? "") }
            #expect(shown.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" } == answered.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }, "\(id)")
        }
    }

    @Test func timelineListsEachNotificationOnceNewestFirstWithWhatItCarried() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        // 62 days hold two monthly renewals whatever the months, and never a third.
        #expect(try await Self.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 62}"#).status == 200)

        let timeline = try await Self.dev(dev.port, "GET", "/dev/customers/alice/timeline")
        #expect(timeline.status == 200)
        let entries = timeline.json["entries"] as? [[String: Any]] ?? []
        let items = entries.compactMap { $0["item"] as? [String: Any] }
        #expect(items.count == entries.count)
        let dates = items.compactMap { $0["occurredAt"] as? String }
        #expect(dates == dates.sorted(by: >))
        // Each notification the simulator posted once, with its delivery, newest first. What the
        // backfill job fetched from the fake Server API, whenever that job ran, is a row of its own:
        // a message without a notification type (`"type": null`) and without a delivery.
        let notifications = items.filter { $0["type"] is String }
        #expect(notifications.map { $0["type"] as? String } == ["DID_RENEW", "DID_RENEW", "SUBSCRIBED"])
        #expect(notifications.last?["subtype"] as? String == "INITIAL_BUY")
        let untyped = entries.filter { !(($0["item"] as? [String: Any])?["type"] is String) }
        #expect(untyped.allSatisfy { !($0["delivery"] is [String: Any]) })
        let deliveries = entries.compactMap { $0["delivery"] as? [String: Any] }
        #expect(deliveries.map { $0["notificationType"] as? String } == ["DID_RENEW", "DID_RENEW", "SUBSCRIBED"])
        #expect(deliveries.allSatisfy { $0["delivered"] as? Bool == true && $0["lastStatus"] as? Int == 200 })
        #expect(Set(deliveries.compactMap { $0["notificationUUID"] as? String }).count == 3)
        // What each carried comes under it: the purchase's transaction and renewal info.
        let first = entries.last?["carried"] as? [[String: Any]] ?? []
        #expect(first.contains { $0["kind"] as? String == "transaction" && $0["price"] as? Int == 9990 })
        #expect(entries.allSatisfy { ($0["carried"] as? [[String: Any]] ?? []).allSatisfy { $0["kind"] as? String != "notification" } })
        let customer = timeline.json["customer"] as? [String: Any]
        let pro = (customer?["entitlements"] as? [String: Any])?["pro"] as? [String: Any]
        #expect(pro?["status"] as? String == "active")

        // Cursor paging continues where the first page stopped, without the deliveries again.
        let page1 = try await Self.dev(dev.port, "GET", "/dev/customers/alice/timeline?limit=2")
        let cursor = try #require(page1.json["nextCursor"] as? String)
        let page2 = try await Self.dev(dev.port, "GET", "/dev/customers/alice/timeline?limit=2&cursor=\(cursor)")
        let ids = { (reply: Loopback.Reply) in
            (reply.json["entries"] as? [[String: Any]] ?? []).flatMap { entry in
                [entry["item"] as? [String: Any]].compactMap { $0 } + (entry["carried"] as? [[String: Any]] ?? [])
            }.compactMap { $0["id"] as? String }
        }
        #expect(ids(page1).count == 2 && ids(page2).count >= 1 && Set(ids(page1)).isDisjoint(with: ids(page2)))
        #expect((page2.json["entries"] as? [[String: Any]] ?? []).allSatisfy { $0["delivery"] == nil })

        #expect(try await Self.dev(dev.port, "GET", "/dev/customers/nobody/timeline").status == 404)
        #expect(try await Self.dev(dev.port, "GET", "/dev/customers/alice/timeline?cursor=bogus").status == 400)
    }

    @Test func devRoutesNeedTheDevKeyAndALoopbackHost() async throws {
        let dev = try await Self.start()
        defer { dev.terminate() }
        let anonymous = try await Loopback.send(port: dev.port, "GET", "/dev/metrics")
        #expect(anonymous.status == 401)
        let post = try await Loopback.send(
            port: dev.port, "POST", "/dev/clock/advance", headers: ["Content-Type": "application/json"],
            body: Array(#"{"days": 1}"#.utf8))
        #expect(post.status == 401)
        let rebound = try await Loopback.send(
            port: dev.port, "GET", "/dev/metrics", headers: ["Authorization": "Bearer \(Self.key)"], host: "evil.example")
        #expect(rebound.status == 403)
        #expect(try await Loopback.send(port: dev.port, "GET", "/", host: "evil.example:8080").status == 403)
        #expect(try await Loopback.send(port: dev.port, "GET", "/", host: "localhost:8080").status == 200)

        // The page is self-contained: it loads nothing from anywhere, and the policy says so.
        let page = try await Loopback.send(port: dev.port, "GET", "/")
        #expect(page.status == 200)
        #expect(page.text.contains("Bearer ${KEY}") && page.text.contains(Self.key))
        #expect(!page.text.contains("src=") && !page.text.contains("<link") && !page.text.contains("https://"))
        #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        // It names the console, the webhooks guide and EntitledKit.
        #expect(page.text.contains(#"href="/console""#))
        #expect(page.text.contains("docs/operations.md#webhooks") && page.text.contains("EntitledKit"))
    }

    @Test func serveHasNoDevRoutes() async throws {
        let server = try await ServeProcess.start()
        defer { server.terminate() }
        for (method, path) in [
            ("GET", "/"), ("GET", "/dev/customers"), ("GET", "/dev/metrics"), ("GET", "/dev/clock"),
            ("GET", "/dev/customers/alice/timeline"), ("POST", "/dev/actions"), ("POST", "/dev/clock/advance"),
            ("GET", "/dev/play"), ("POST", "/dev/play/actions"),
        ] {
            let reply = try await Loopback.send(
                port: server.port, method, path, headers: ["Authorization": "Bearer \(Self.key)"], body: Array("{}".utf8))
            #expect(reply.status == 404, "\(method) \(path)")
        }
    }
}
