import EntitledConfig
@testable import EntitledServer
@testable import EntitledTestSupport
import Entitlements
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import HTTPServer
import Storage
import Testing

/// `googlePlay.orderPrices`: an order whose price the purchase does not say (an introductory
/// phase, a one-time product) is priced from the fake Google's Orders API by a durable job after
/// the commit, retried while Google fails; the revenue chart counts it once, refunds by quantity
/// take back their share; on SQLite and PostgreSQL.
@Suite(.serialized) struct PlayOrderPriceTests {
    typealias Served = PlayAcknowledgementTests.Served
    static let package = PlayWorld.packageName
    static func usd(_ milliunits: Int64) -> Money { Money(currencyCode: "USD", milliunits: milliunits) }

    /// A server asking the Orders API, with a console key for the charts; `acknowledge` off
    /// leaves the price jobs alone in the queue.
    static func served(_ world: PlayWorld, _ backend: StoredBackend, acknowledge: Bool = false) async throws -> Served {
        try await Served(world, backend) {
            $0.playApps[0].googlePlay.orderPrices = true
            $0.playApps[0].googlePlay.acknowledge = acknowledge
            $0.apiKeys.append(APIKey(name: "console", secret: "console-secret-0123456789", scopes: [.console]))
        }
    }

    /// The Play store's totals of the revenue chart's `series` over the test's months.
    static func revenue(_ served: Served, _ series: String) async throws -> Double {
        let reply = try await Loopback.send(
            port: served.server.port, "GET", "/v1/charts/revenue?from=2027-01-01&to=2027-06-30&interval=month&segment=store",
            headers: ["Authorization": APIHarness.console])
        #expect(reply.status == 200, "\(reply.text)")
        let points = reply.json["points"] as? [[String: Any]] ?? []
        let total = points.filter {
            $0["series"] as? String == series && $0["segment"] as? String == "playStore" && $0["converted"] as? Bool != true
        }.compactMap { $0["value"] as? Double }.reduce(0, +)
        return (total * 1000).rounded() / 1000
    }

    static func push(_ world: PlayWorld, _ served: Served, _ notification: DeveloperNotification, messageId: String) async throws -> Int {
        let pusher = FakePubSubPusher(
            google: world.google, endpoint: URL(string: "http://127.0.0.1:\(served.server.port)/v1/google/notifications")!,
            identity: .init(audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount), transport: CurlHTTP())
        return try await CurlHTTP().send(try pusher.request(for: notification, messageId: messageId)).status
    }

    @Test(arguments: StoredBackend.all)
    func introductoryAndOneTimeOrdersGetTheirPrice(_ backend: StoredBackend) async throws {
        let world = try PlayWorld(price: Self.usd(9_990), unitPrice: Self.usd(4_990))
        let served = try await Self.served(world, backend, acknowledge: true)
        defer { Task { await served.close(); await world.close() } }
        let subscription = try world.google.buySubscription(packageName: Self.package, productId: "premium", introductoryPrice: Self.usd(1_990))
        #expect(world.google.subscription(subscription)?.lineItems.first?.offerPhase == .introductory)
        let product = try world.google.buyProduct(packageName: Self.package, productId: "lifetime")
        #expect(try await served.post("premium", subscription).status == 200)
        #expect(try await served.post("lifetime", product).status == 200)
        // Stored and answered before Google was asked: nothing to count yet.
        #expect(try await Self.revenue(served, "gross") == 0)

        // Two acknowledgements, two prices.
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 4))
        #expect(try await Self.revenue(served, "gross") == 6.98)
        #expect(try await Self.revenue(served, "proceeds") == 5.184, "15 % of the subscription, 30 % of the product")
        // The overview's MRR of the introductory month, from its first day.
        let overview = try await Loopback.send(
            port: served.server.port, "GET", "/v1/metrics/overview?from=2027-01-15&to=2027-01-15&interval=day",
            headers: ["Authorization": APIHarness.admin])
        let first = (overview.json["series"] as? [[String: Any]])?.first
        #expect((first?["mrr"] as? [String: Any])?["USD"] as? Double == 1.99, "\(overview.text)")

        // The renewal is at the base price, which the purchase says: Google is not asked.
        world.clock.advance(by: PlayWorld.period * 1000)
        try world.google.renew(subscription)
        #expect(try await served.post("premium", subscription).status == 200)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())
        #expect(try await Self.revenue(served, "gross") == 16.97)
        let history = try await Loopback.send(
            port: served.server.port, "GET", "/v1/customers/alice/history", headers: ["Authorization": APIHarness.writer])
        let orders = (history.json["items"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "playOrder" }
        #expect(Set(orders.compactMap { $0["price"] as? Int }) == [1_990, 4_990], "\(history.text)")
    }

    @Test(arguments: StoredBackend.all)
    func aFailingOrdersAPIIsRetriedUntilItAnswers(_ backend: StoredBackend) async throws {
        let world = try PlayWorld(price: Self.usd(9_990), unitPrice: Self.usd(4_990))
        let served = try await Self.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let product = try world.google.buyProduct(packageName: Self.package, productId: "lifetime")
        #expect(try await served.post("lifetime", product).status == 200)
        // More 503s than the client's own retries: the job fails and waits for its backoff.
        world.google.failNextCalls(status: 503, count: 5)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(retried: 1))
        #expect(try await Self.revenue(served, "gross") == 0)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(), "not due before its backoff")

        world.clock.advance(by: JobRunner.backoffMilliseconds(afterAttempt: 1))
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 1))
        #expect(try await Self.revenue(served, "gross") == 4.99)
    }

    @Test(arguments: StoredBackend.all)
    func aRefundByQuantityTakesBackItsUnits(_ backend: StoredBackend) async throws {
        let world = try PlayWorld(unitPrice: Self.usd(1_000))
        let served = try await Self.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let coins = try world.google.buyProduct(packageName: Self.package, productId: "coins", quantity: 5)
        #expect(try await served.post("coins", coins).status == 200)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 1))
        #expect(try await Self.revenue(served, "gross") == 5)

        world.clock.advance(by: 86_400_000)
        _ = world.google.takeNotifications()
        try world.google.refundProductQuantity(coins, quantity: 2)
        for (index, notification) in world.google.takeNotifications().enumerated() {
            #expect(try await Self.push(world, served, notification, messageId: "r-\(index)") == 200)
        }
        #expect(try await Self.revenue(served, "gross") == 5)
        #expect(try await Self.revenue(served, "refunds") == 2)
        #expect(try await Self.revenue(served, "net") == 3)
        let ltv = try await Loopback.send(
            port: served.server.port, "GET", "/v1/charts/ltv_per_customer?from=2027-01-01&to=2027-06-30&interval=month",
            headers: ["Authorization": APIHarness.console])
        let values = (ltv.json["points"] as? [[String: Any]] ?? []).filter { $0["series"] as? String == "ltv" && $0["converted"] as? Bool != true }
        #expect(values.compactMap { $0["value"] as? Double }.max() == 3, "\(ltv.text)")

        // The rest refunded in full: all of the price is taken back, once.
        world.clock.advance(by: 3_600_000)
        try world.google.refundProduct(coins)
        for (index, notification) in world.google.takeNotifications().enumerated() {
            #expect(try await Self.push(world, served, notification, messageId: "f-\(index)") == 200)
        }
        #expect(try await Self.revenue(served, "refunds") == 5)
        #expect(try await Self.revenue(served, "net") == 0)
    }

    /// Every notification pushed twice under new message ids and in reverse order, and the same
    /// purchase posted again: one job per order, one price counted.
    @Test(arguments: StoredBackend.all)
    func repeatedAndReorderedPushesCountOnce(_ backend: StoredBackend) async throws {
        let world = try PlayWorld(price: Self.usd(9_990), unitPrice: Self.usd(4_990))
        let served = try await Self.served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let subscription = try world.google.buySubscription(packageName: Self.package, productId: "premium", introductoryPrice: Self.usd(1_990))
        let product = try world.google.buyProduct(packageName: Self.package, productId: "lifetime")
        world.clock.advance(by: 1000)
        let notifications = world.google.takeNotifications()
        #expect(notifications.count == 2)
        for (round, batch) in [notifications.reversed(), notifications, notifications.reversed()].enumerated() {
            for (index, notification) in batch.enumerated() {
                #expect(try await Self.push(world, served, notification, messageId: "m-\(round)-\(index)") == 200)
            }
            if round == 1 { #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report(done: 2)) }
        }
        #expect(try await served.post("premium", subscription).status == 200)
        #expect(try await served.post("lifetime", product).status == 200)
        #expect(try await served.jobs.runDue() == PlayAcknowledgementTests.report())
        let jobs = try await served.store.jobs(status: nil, limit: 100).filter { $0.kind == PlayOrderPrice.jobKind }
        #expect(jobs.count == 2)
        #expect(try await Self.revenue(served, "gross") == 6.98)
    }
}
