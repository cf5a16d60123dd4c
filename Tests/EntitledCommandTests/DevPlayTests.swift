@testable import EntitledTestSupport
import Foundation
import GooglePlaySimulator
import Testing

/// `entitled dev`'s Google Play, against the real binary: the fake Google on loopback, Play
/// lifecycles driven through `/dev/play/actions`, each pushed to `/v1/google/notifications` with a
/// signed OIDC token and fetched back from the fake's Developer API by the server.
@Suite struct DevPlayTests {
    static let key = DevDashboardTests.key

    static func answer(_ port: Int, _ id: String) async throws -> Loopback.Reply {
        try await Loopback.send(port: port, "GET", "/v1/customers/\(id)", headers: ["Authorization": "Bearer \(key)"])
    }

    /// Posts one Play action; answers the reply and the notification types it pushed.
    static func play(_ port: Int, _ body: String) async throws -> (reply: Loopback.Reply, types: [String]) {
        let reply = try await DevDashboardTests.dev(port, "POST", "/dev/play/actions", body)
        let pushes = reply.json["notifications"] as? [[String: Any]] ?? []
        // Every push was accepted by the server (200 only once its facts are committed).
        #expect(pushes.allSatisfy { $0["delivered"] as? Bool == true && $0["status"] as? Int == 200 }, "\(reply.text)")
        return (reply, pushes.compactMap { $0["notificationType"] as? String })
    }

    static func events(_ port: Int, of customer: String) async throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        var after = ""
        while true {
            let page = try await Loopback.send(
                port: port, "GET", "/v1/events?limit=100" + (after.isEmpty ? "" : "&after=\(after)"),
                headers: ["Authorization": "Bearer \(key)"])
            let events = page.json["events"] as? [[String: Any]] ?? []
            all += events
            guard let next = page.json["nextCursor"] as? String, !events.isEmpty else { break }
            after = next
        }
        return all.filter { $0["appUserId"] as? String == customer }
    }

    @Test func theSeededPlayCustomerIsAnsweredLikeAnAppleOne() async throws {
        let dev = try await DevDashboardTests.start()
        defer { dev.terminate() }
        let gina = try await Self.answer(dev.port, "gina")
        let pro = try #require(gina.entitlement("pro"))
        #expect(pro["store"] as? String == "playStore")
        #expect(pro["productId"] as? String == "pro.monthly")
        #expect(pro["active"] as? Bool == true)
        let info = try await DevDashboardTests.dev(dev.port, "GET", "/dev/play")
        #expect(info.status == 200)
        #expect(info.json["packageName"] as? String == "com.example.android")
        let purchases = info.json["purchases"] as? [[String: Any]] ?? []
        #expect(purchases.map { $0["customer"] as? String } == ["gina"])
        #expect(purchases.first?["state"] as? String == "SUBSCRIPTION_STATE_ACTIVE")
        // The server's acknowledgement job reaches the fake Google (every few real seconds).
        let acknowledged = try await eventually(within: .seconds(30)) {
            let now = try await DevDashboardTests.dev(dev.port, "GET", "/dev/play")
            return (now.json["purchases"] as? [[String: Any]])?.first?["acknowledged"] as? Bool == true
        }
        #expect(acknowledged)
        // Listed with the App Store's customers, with a timeline.
        let rows = try await DevDashboardTests.dev(dev.port, "GET", "/dev/customers").json["customers"] as? [[String: Any]] ?? []
        #expect(rows.contains { $0["appUserId"] as? String == "gina" && $0["status"] as? String == "active" })
        #expect(try await DevDashboardTests.dev(dev.port, "GET", "/dev/customers/gina/timeline").status == 200)
        // A month later the fake renewed it by itself and pushed the renewal.
        let before = try #require(pro["expiresAt"] as? String)
        #expect(try await DevDashboardTests.dev(dev.port, "POST", "/dev/clock/advance", #"{"days": 31}"#).status == 200)
        let renewed = try #require(try await Self.answer(dev.port, "gina").entitlement("pro"))
        #expect(renewed["active"] as? Bool == true)
        #expect(try #require(renewed["expiresAt"] as? String) > before)
        #expect(try await Self.events(dev.port, of: "gina").compactMap { $0["type"] as? String }.contains("subscription.renewed"))
    }

    @Test func devSellsTheConfigurationsPlayAppAtTheFakeGoogle() async throws {
        // A key file the configuration check accepts; dev replaces it with the fake's own.
        let issuer = try FakeGoogleServer(
            google: try FakeGoogle(products: [], clock: VirtualClock(APIHarness.start), signingKey: PlayWorld.googleKey))
        let keyFile = try issuer.serviceAccountKeyFile(key: PlayWorld.serviceAccountKey)
        await issuer.shutdown()
        let (folder, config) = try DevOwnProductsTests.file(
            "entitled.json",
            #"""
            {"apps": [
              {"bundleId": "com.acme.birds", "appAppleId": 42, "environments": ["Production"],
               "products": [{"productId": "birds.lifetime", "type": "nonConsumable", "entitlements": ["premium"]}]},
              {"packageName": "com.acme.birds.android",
               "googlePlay": {"serviceAccountKeyFile": "key.json",
                              "pubsub": {"audience": "https://birds.example/v1/google/notifications",
                                         "serviceAccountEmail": "push@acme.iam.gserviceaccount.com"}},
               "products": [{"productId": "birds.premium", "type": "autoRenewable", "subscriptionGroup": "birds",
                             "basePlans": ["monthly", "yearly"], "entitlements": ["premium", "sync"]}]}]}
            """#)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(keyFile).write(to: folder.appendingPathComponent("key.json"))
        let dev = try await ServeProcess.start { DevRestartTests.devArguments($0, ["--config", config.path]) }
        defer { dev.terminate() }
        let info = try await DevDashboardTests.dev(dev.port, "GET", "/dev/play")
        #expect(info.json["packageName"] as? String == "com.acme.birds.android")
        #expect((info.json["products"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } == ["birds.premium"])
        // Not seeded: Gina would buy a product this catalog does not sell.
        #expect((info.json["purchases"] as? [[String: Any]] ?? []).isEmpty)
        let buy = try await Self.play(dev.port, #"{"action": "buy", "customer": "zoe", "product": "birds.premium", "basePlan": "yearly"}"#)
        #expect(buy.types == ["SUBSCRIPTION_PURCHASED"])
        #expect(try await DevOwnProductsTests.entitlements(dev.port, "zoe") == ["premium": "birds.premium", "sync": "birds.premium"])
        #expect(try await Self.answer(dev.port, "zoe").entitlement("sync")?["store"] as? String == "playStore")
    }

    @Test func aPlayLifecycleThroughTheControlAPIChangesTheAnswerAndTheEvents() async throws {
        let dev = try await DevDashboardTests.start()
        defer { dev.terminate() }
        let port = dev.port
        func entitlement(_ id: String) async throws -> [String: Any]? { try await Self.answer(port, "pat").entitlement(id) }

        let buy = try await Self.play(port, #"{"action": "buy", "customer": "pat", "product": "basic.monthly"}"#)
        #expect(buy.reply.status == 200)
        #expect(buy.types == ["SUBSCRIPTION_PURCHASED"])
        #expect(try await entitlement("basic")?["store"] as? String == "playStore")
        #expect(try await entitlement("basic")?["status"] as? String == "active")

        #expect(try await Self.play(port, #"{"action": "fail", "customer": "pat", "product": "basic.monthly"}"#).types == ["SUBSCRIPTION_IN_GRACE_PERIOD"])
        #expect(try await entitlement("basic")?["status"] as? String == "gracePeriod")
        #expect(try await entitlement("basic")?["active"] as? Bool == true)
        #expect(try await Self.play(port, #"{"action": "hold", "customer": "pat", "product": "basic.monthly"}"#).types == ["SUBSCRIPTION_ON_HOLD"])
        #expect(try await entitlement("basic")?["status"] as? String == "billingRetry")
        #expect(try await entitlement("basic")?["active"] as? Bool == false)
        #expect(try await Self.play(port, #"{"action": "recover", "customer": "pat", "product": "basic.monthly"}"#).types == ["SUBSCRIPTION_RECOVERED"])
        #expect(try await entitlement("basic")?["status"] as? String == "active")

        // The upgrade is a new token linked to the old one: pro from pro.monthly, basic superseded.
        let upgrade = try await Self.play(port, #"{"action": "upgrade", "customer": "pat", "product": "basic.monthly", "to": "pro.monthly"}"#)
        #expect(upgrade.types == ["SUBSCRIPTION_PURCHASED"])
        #expect(try await entitlement("pro")?["productId"] as? String == "pro.monthly")
        #expect(try await entitlement("pro")?["active"] as? Bool == true)
        #expect(try await entitlement("basic")?["active"] as? Bool == false)

        #expect(try await Self.play(port, #"{"action": "pause", "customer": "pat", "product": "pro.monthly", "days": 7}"#).types == ["SUBSCRIPTION_PAUSED"])
        #expect(try await entitlement("pro")?["active"] as? Bool == false)
        // The pause ends by itself: the fake resumes it as virtual days pass and pushes the renewal.
        #expect(try await DevDashboardTests.dev(port, "POST", "/dev/clock/advance", #"{"days": 8}"#).status == 200)
        #expect(try await entitlement("pro")?["active"] as? Bool == true)

        #expect(try await Self.play(port, #"{"action": "cancel", "customer": "pat", "product": "pro.monthly"}"#).types == ["SUBSCRIPTION_CANCELED"])
        #expect(try await entitlement("pro")?["active"] as? Bool == true)
        #expect(try await entitlement("pro")?["willRenew"] as? Bool == false)
        let refund = try await Self.play(port, #"{"action": "refund", "customer": "pat", "product": "pro.monthly"}"#)
        #expect(refund.types == ["SUBSCRIPTION_REVOKED", "VOIDED_PURCHASE"])
        #expect(try await entitlement("pro")?["status"] as? String == "refunded")
        #expect(try await entitlement("pro")?["active"] as? Bool == false)

        // A one-time product, bought and voided.
        #expect(try await Self.play(port, #"{"action": "buy", "customer": "pat", "product": "lifetime"}"#).types == ["ONE_TIME_PRODUCT_PURCHASED"])
        #expect(try await entitlement("pro")?["productId"] as? String == "lifetime")
        #expect(try await entitlement("pro")?["active"] as? Bool == true)
        #expect(try await Self.play(port, #"{"action": "refund", "customer": "pat", "product": "lifetime"}"#).types == ["VOIDED_PURCHASE"])
        #expect(try await entitlement("pro")?["active"] as? Bool == false)

        // The events tell the backend the same story, each from the Play store.
        let events = try await Self.events(port, of: "pat")
        let types = events.compactMap { $0["type"] as? String }
        for expected in [
            "subscription.started", "subscription.billing_issue", "subscription.grace_period_expired", "subscription.recovered",
            "subscription.product_changed", "subscription.auto_renew_disabled", "subscription.refunded", "purchase.completed",
            "purchase.refunded",
        ] {
            #expect(types.contains(expected), "\(expected) in \(types)")
        }
        let purchaseEvents = events.filter { ($0["type"] as? String ?? "").hasPrefix("subscription.") || ($0["type"] as? String ?? "").hasPrefix("purchase.") }
        #expect(!purchaseEvents.isEmpty)
        #expect(purchaseEvents.allSatisfy { ($0["data"] as? [String: Any])?["store"] as? String == "playStore" }, "\(purchaseEvents)")
        let rows = try await DevDashboardTests.dev(port, "GET", "/dev/customers").json["customers"] as? [[String: Any]] ?? []
        #expect(rows.contains { $0["appUserId"] as? String == "pat" })

        // Refusals: a product the customer never bought, an unknown action, a product not on sale.
        let never = try await DevDashboardTests.dev(port, "POST", "/dev/play/actions", #"{"action": "renew", "customer": "zed", "product": "pro.monthly"}"#)
        #expect(never.status == 400)
        #expect(never.code == "INVALID_ACTION")
        #expect(try await DevDashboardTests.dev(port, "POST", "/dev/play/actions", #"{"action": "nonsense", "customer": "pat", "product": "pro.monthly"}"#).status == 400)
        #expect(try await DevDashboardTests.dev(port, "POST", "/dev/play/actions", #"{"action": "buy", "customer": "pat", "product": "nothing"}"#).status == 400)
    }

    /// The dashboard's "Refund units" and "Refund review": Google refunds some units of a
    /// multi-unit one-time purchase, and asks for a review of a purchase's order, each pushed and
    /// told to the backend.
    @Test func partialRefundsAndRefundReviewsFromTheDashboard() async throws {
        let dev = try await DevDashboardTests.start()
        defer { dev.terminate() }
        let port = dev.port
        let buy = try await Self.play(port, #"{"action": "buy", "customer": "quinn", "product": "lifetime", "quantity": 3}"#)
        #expect(buy.types == ["ONE_TIME_PRODUCT_PURCHASED"])
        #expect(try await Self.play(port, #"{"action": "refund_units", "customer": "quinn", "product": "lifetime", "quantity": 1}"#).types == ["VOIDED_PURCHASE"])
        #expect(try await Self.answer(port, "quinn").entitlement("pro")?["active"] as? Bool == true, "two units are kept")
        let partial = try await Self.events(port, of: "quinn").first { $0["type"] as? String == "purchase.refunded" }
        let data = try #require(partial?["data"] as? [String: Any], "a partial refund is told")
        #expect(data["refundType"] as? String == "quantity" && data["quantity"] as? String == "1" && data["remainingQuantity"] as? String == "2", "\(data)")
        // More units than are left: refused, nothing pushed.
        let tooMany = try await DevDashboardTests.dev(port, "POST", "/dev/play/actions", #"{"action": "refund_units", "customer": "quinn", "product": "lifetime", "quantity": 5}"#)
        #expect(tooMany.status == 400 && tooMany.code == "INVALID_ACTION", "\(tooMany.text)")

        // Google asks the developer's view on a refund of the order: the backend is told, and
        // can list it to answer through the server.
        #expect(try await Self.play(port, #"{"action": "refund_review", "customer": "quinn", "product": "lifetime"}"#).types == ["PENDING_REFUND_REVIEW"])
        let told = try #require(try await Self.events(port, of: "quinn").first { $0["type"] as? String == "refund_review.requested" })
        let orderId = try #require((told["data"] as? [String: Any])?["orderId"] as? String)
        let open = try await Loopback.send(port: port, "GET", "/v1/google/refund-reviews", headers: ["Authorization": "Bearer \(Self.key)"])
        #expect((open.json["reviews"] as? [[String: Any]])?.map { $0["orderId"] as? String } == [orderId], "\(open.text)")

        // The remaining units refunded: nothing is left.
        #expect(try await Self.play(port, #"{"action": "refund_units", "customer": "quinn", "product": "lifetime", "quantity": 2}"#).types == ["VOIDED_PURCHASE"])
        #expect(try await Self.answer(port, "quinn").entitlement("pro")?["active"] as? Bool == false)
        // The page offers both.
        let page = try await Loopback.send(port: port, "GET", "/")
        #expect(page.text.contains("'refund_review'") && page.text.contains("'refund_units'") && page.text.contains("d-play-quantity"))
    }
}
