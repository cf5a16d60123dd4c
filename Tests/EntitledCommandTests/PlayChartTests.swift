import AppStoreSimulator
import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPServer
import Storage
import Testing

/// A Google Play customer and an App Store customer paying the same price for the same periods
/// show the same lines in the charts and the overview, refunds included, on SQLite and PostgreSQL.
@Suite(.serialized) struct PlayChartTests {
    static let day: Int64 = 86_400_000
    static let period = PlayWorld.period * 1000

    /// The App Store customer's transaction of period `k` (0-based), refunded at `revoked`.
    static func apple(_ k: Int64, signed: Int64, revoked: Int64? = nil) -> (fact: Fact, signed: String?) {
        let start = APIHarness.start + k * period
        let t = TransactionFact(
            transactionId: "a\(k)", originalTransactionId: "a0", productId: "premium", purchaseDate: start,
            originalPurchaseDate: APIHarness.start, expiresDate: start + period, productType: .autoRenewable, signedDate: signed,
            revocationDate: revoked, revocationReason: revoked == nil ? nil : 0, storefront: "USA", transactionReason: k == 0 ? .purchase : .renewal,
            price: 9_990, currency: "USD")
        return (.transaction(t), "signed-a\(k)-\(signed)")
    }

    @Test(arguments: StoredBackend.all)
    func playAndAppleAtOnePriceChartAlike(_ backend: StoredBackend) async throws {
        let world = try PlayWorld(price: Money(currencyCode: "USD", units: "9", nanos: 990_000_000))
        defer { Task { await world.close() } }
        var configuration = world.configuration
        configuration.apiKeys.append(APIKey(name: "console", secret: "console-secret-0123456789", scopes: [.console]))
        let store = try await backend.open()
        let (server, ledger) = try await startServer(configuration: configuration, store: store, clock: world.clock)
        world.servers.append((server, store))
        var message = 0
        func apple(_ facts: [(fact: Fact, signed: String?)]) async throws {
            message += 1
            let received = ReceivedMessage(
                notificationUUID: "apple-\(message)", source: .client, body: Array("apple-\(message)".utf8), receivedAt: world.clock.nowMilliseconds(),
                bundleId: APIHarness.bundleId)
            #expect(try await ledger.ingest(received, facts: facts, claim: Claim(appUserId: "alice")) == .accepted)
        }
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                message += 1
                #expect(try await world.push(0, notification, messageId: "m-\(message)") == 200)
            }
        }

        // Both buy on day 0, renew once, and the second period is refunded two days in.
        let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        let item = world.google.subscription(token)?.lineItems.first
        #expect(item?.autoRenewingPlan?.recurringPrice?.milliunits == 9_990 && item?.offerPhase == .base, "the fake answers the price")
        #expect(try await world.postPurchase(0, "bob", productId: "premium", token: token).status == 200)
        try await deliver()
        try await apple([Self.apple(0, signed: APIHarness.start)])
        world.clock.advance(by: Self.period)
        try world.google.renew(token)
        try await deliver()
        try await apple([Self.apple(1, signed: world.clock.nowMilliseconds())])
        world.clock.advance(by: 2 * Self.day)
        try world.google.revoke(token)
        try await deliver()
        try await apple([Self.apple(1, signed: world.clock.nowMilliseconds(), revoked: world.clock.nowMilliseconds())])
        world.clock.advance(by: Self.day)

        let range = "from=2027-01-10&to=2027-03-31&interval=day&segment=store"
        for chart in ["revenue", "mrr", "mrr_movement", "actives", "actives_movement", "ltv_per_customer"] {
            let reply = try await Loopback.send(
                port: server.port, "GET", "/v1/charts/\(chart)?\(range)", headers: ["Authorization": APIHarness.console])
            #expect(reply.status == 200, "\(chart): \(reply.text)")
            let points = try #require(reply.json["points"] as? [[String: Any]])
            func line(_ store: String) -> [String] {
                // Proceeds differ by design: each store's commission (checked below).
                points.filter { $0["segment"] as? String == store && $0["series"] as? String != "proceeds" }.map {
                    "\($0["date"] ?? "") \($0["series"] ?? "") \($0["currency"] ?? "") \($0["value"] ?? "")"
                }.sorted()
            }
            #expect(!line("playStore").isEmpty, "\(chart)")
            #expect(line("playStore") == line("appStore"), "\(chart)")
        }
        // Google's `US` and Apple's `USA` are one storefront: both customers in one segment.
        let actives = try await Loopback.send(
            port: server.port, "GET", "/v1/charts/actives?from=2027-01-15&to=2027-01-15&interval=day&segment=storefront",
            headers: ["Authorization": APIHarness.console])
        let storefronts = try #require(actives.json["points"] as? [[String: Any]])
        #expect(Set(storefronts.compactMap { $0["segment"] as? String }) == ["USA"], "\(actives.text)")
        #expect(storefronts.compactMap { $0["value"] as? Double }.reduce(0, +) == 2, "\(actives.text)")
        let bob = try await world.send(0, "GET", "/v1/customers/bob")
        #expect(bob.json["storefront"] as? String == "USA", "\(bob.text)")

        let revenue = try await Loopback.send(
            port: server.port, "GET", "/v1/charts/revenue?from=2027-01-10&to=2027-03-31&interval=month&segment=store",
            headers: ["Authorization": APIHarness.console])
        let points = try #require(revenue.json["points"] as? [[String: Any]])
        func total(_ series: String, _ store: String) -> Double {
            points.filter { $0["series"] as? String == series && $0["segment"] as? String == store && $0["converted"] as? Bool != true }
                .compactMap { $0["value"] as? Double }.reduce(0, +)
        }
        #expect(total("gross", "playStore") == 19.98)
        #expect(total("refunds", "playStore") == 9.99)
        #expect(total("proceeds", "playStore") == 16.982, "Google's 15 % on subscriptions")
        #expect(total("proceeds", "appStore") == 13.986, "Apple's 30 % in the first year")

        // The overview: both customers' MRR and revenue.
        let overview = try await Loopback.send(
            port: server.port, "GET", "/v1/metrics/overview?from=2027-01-15&to=2027-01-15&interval=day",
            headers: ["Authorization": APIHarness.admin])
        #expect(overview.status == 200, "\(overview.text)")
        let first = try #require((overview.json["series"] as? [[String: Any]])?.first)
        #expect((first["mrr"] as? [String: Any])?["USD"] as? Double == 19.98, "\(first)")
        #expect(first["activeSubscriptions"] as? Int == 2)
    }

    /// `entitled dev`'s seeded Play customer pays the fake's price: its events carry it.
    @Test func devPlayPurchasesHavePrices() async throws {
        let dev = try await DevDashboardTests.start()
        defer { dev.terminate() }
        let started = try await eventually(within: .seconds(30)) {
            try await DevPlayTests.events(dev.port, of: "gina").contains { $0["type"] as? String == "subscription.started" }
        }
        #expect(started)
        let events = try await DevPlayTests.events(dev.port, of: "gina")
        let start = try #require(events.first { $0["type"] as? String == "subscription.started" })
        let data = start["data"] as? [String: Any] ?? [:]
        #expect(data["store"] as? String == "playStore")
        #expect(data["price"] as? String == "9.99", "\(data)")
        #expect(data["currency"] as? String == "USD")
    }
}
