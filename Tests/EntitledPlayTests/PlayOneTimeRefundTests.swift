import EntitledConfig
@testable import EntitledServer
@testable import EntitledTestSupport
import Foundation
import GooglePlay
import GooglePlaySimulator
import Testing

/// One-time Play purchases against the fake Google, on SQLite and PostgreSQL: `entitled reconcile`
/// asks `purchases.products.get` again about their tokens, and a quantity-based partial refund
/// takes back only its units, once, whether the notification, the voided-purchases poll or both
/// report it.
@Suite(.serialized) struct PlayOneTimeRefundTests {
    typealias Served = PlayAcknowledgementTests.Served

    /// The customer's `nonSubscriptions` item of `productId`.
    static func item(_ reply: Loopback.Reply, _ productId: String) -> [String: Any]? {
        (reply.json["nonSubscriptions"] as? [[String: Any]])?.first { $0["id"] as? String == productId }
    }

    @Test(arguments: StoredBackend.all)
    func catchUpAsksAboutOneTimeTokens(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let catchUp = try #require(served.assembled.playCatchUp(packageName: PlayWorld.packageName))
        let package = PlayWorld.packageName
        let lifetime = try world.google.buyProduct(packageName: package, productId: "lifetime")
        let coins = try world.google.buyProduct(packageName: package, productId: "coins", quantity: 5)
        #expect(try await served.post("lifetime", lifetime).status == 200)
        #expect(try await served.post("coins", coins).status == 200)
        #expect(PlayCatchUpTests.counts(try await catchUp.run()) == PlayCatchUpTests.report(tokens: 2, unchanged: 2))

        // Refunds whose notifications were lost: the whole of one, two units of the other.
        world.clock.advance(by: 86_400_000)
        try world.google.refundProduct(lifetime)
        try world.google.refundProductQuantity(coins, quantity: 2)
        _ = world.google.takeNotifications()
        var answer = try await PlayVoidedPollTests.answer(served)
        #expect(GooglePlayAPITests.entitlement(answer, "extras")?["active"] as? Bool == true)
        #expect(Self.item(answer, "coins")?["balance"] as? Int == 5, "\(answer.text)")
        #expect(PlayCatchUpTests.counts(try await catchUp.run()) == PlayCatchUpTests.report(tokens: 2, changed: 2))
        answer = try await PlayVoidedPollTests.answer(served)
        #expect(GooglePlayAPITests.entitlement(answer, "extras")?["status"] as? String == "refunded", "\(answer.text)")
        #expect(Self.item(answer, "coins")?["balance"] as? Int == 3, "\(answer.text)")
        #expect(Self.item(answer, "coins")?["refunded"] as? Int == 2, "\(answer.text)")

        // Again: the refunded purchase is final, the other unchanged; nothing is stored.
        let facts = try await PlayVoidedPollTests.factCount(served.store)
        #expect(PlayCatchUpTests.counts(try await catchUp.run()) == PlayCatchUpTests.report(tokens: 2, final: 1, unchanged: 1))
        #expect(try await PlayVoidedPollTests.factCount(served.store) == facts)
    }

    /// Two units of five refunded: the push stores Google's fresh count, the poll's listing of the
    /// same refund (and the push delivered again) change nothing more; the answer and the events
    /// count the refund once. A non-consumable bought three times stays owned until its last unit.
    @Test(arguments: StoredBackend.all)
    func partialRefundCountsOnceByPushAndPoll(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        let assembled = try await world.startFeedServer(backend)
        let poll = try #require(assembled.playVoidedPolls.first)
        let package = PlayWorld.packageName
        var sequence = 0
        var delivered: [(notification: DeveloperNotification, messageId: String)] = []
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                sequence += 1
                delivered.append((notification, "m-\(sequence)"))
                #expect(try await world.push(0, notification, messageId: "m-\(sequence)") == 200)
            }
        }
        func answer() async throws -> Loopback.Reply {
            try await Loopback.send(
                port: world.servers[0].server.port, "GET", "/v1/customers/alice", headers: ["Authorization": APIHarness.writer])
        }
        let coins = try world.google.buyProduct(packageName: package, productId: "coins", quantity: 5)
        let lifetime = try world.google.buyProduct(packageName: package, productId: "lifetime", quantity: 3)
        #expect(try await world.postPurchase(0, "alice", productId: "coins", token: coins).status == 200)
        #expect(try await world.postPurchase(0, "alice", productId: "lifetime", token: lifetime).status == 200)
        try await deliver()
        #expect(Self.item(try await answer(), "coins")?["balance"] as? Int == 5)

        world.clock.advance(by: 86_400_000)
        try world.google.refundProductQuantity(coins, quantity: 2)
        try await deliver()
        let refunded = try await answer()
        #expect(Self.item(refunded, "coins")?["balance"] as? Int == 3, "\(refunded.text)")
        // The same push again, and Google delivering it again under another messageId.
        let last = try #require(delivered.last)
        #expect(try await world.push(0, last.notification, messageId: last.messageId) == 200)
        #expect(try await world.push(0, last.notification, messageId: "m-again") == 200)
        world.clock.advance(by: 3_600_000)
        #expect(PlayVoidedPollTests.committed(try await poll.runOnce()) == PlayVoidedPollTests.report(listed: 1, new: 1, known: 0))
        world.clock.advance(by: 3_600_000)
        #expect(PlayVoidedPollTests.committed(try await poll.runOnce()) == PlayVoidedPollTests.report(listed: 1, new: 0, known: 1))
        #expect(try await world.answer(0, "alice") == String(decoding: try JSONSerialization.data(
            withJSONObject: ["entitlements": refunded.json["entitlements"] ?? NSNull(), "subscriptions": refunded.json["subscriptions"] ?? NSNull(),
                             "nonSubscriptions": refunded.json["nonSubscriptions"] ?? NSNull(), "state": refunded.json["state"] ?? NSNull()],
            options: [.sortedKeys]), as: UTF8.self))

        // Two of the three non-consumable units, then the last.
        try world.google.refundProductQuantity(lifetime, quantity: 2)
        try await deliver()
        #expect(GooglePlayAPITests.entitlement(try await answer(), "extras")?["active"] as? Bool == true)
        world.clock.advance(by: 3_600_000)
        try world.google.refundProductQuantity(lifetime, quantity: 1)
        try await deliver()
        #expect(GooglePlayAPITests.entitlement(try await answer(), "extras")?["status"] as? String == "refunded")

        let reply = try await Loopback.send(
            port: world.servers[0].server.port, "GET", "/v1/events", headers: ["Authorization": APIHarness.reader], body: [])
        let events = try #require(reply.json["events"] as? [[String: Any]])
        let refunds = events.filter { $0["type"] as? String == "purchase.refunded" }.map { event in
            let data = event["data"] as? [String: Any]
            return "\(event["productId"] ?? "") \(data?["quantity"] ?? "-") \(data?["remainingQuantity"] ?? "-")"
        }
        #expect(refunds == ["coins 2 3", "lifetime 2 1", "lifetime 1 0"], "\(reply.text)")
    }
}
