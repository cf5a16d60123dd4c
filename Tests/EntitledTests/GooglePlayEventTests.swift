import EntitledServer
import Foundation
import GooglePlaySimulator
import Testing

/// A Play customer's events in the feed, end to end: the fake Google pushes to
/// `POST /v1/google/notifications`, and `GET /v1/events` lists what happened, with `store: playStore`.
@Suite(.serialized) struct GooglePlayEventTests {
    @Test(arguments: StoredBackend.all)
    func pushedLifecycleShowsInTheFeed(_ backend: StoredBackend) async throws {
        let world = try GooglePlayAPITests.World()
        defer { Task { await world.close() } }
        // Events at the commit (no settle window), so the feed shows them as the pushes land.
        var configuration = world.configuration
        configuration.events.settleSeconds = 0
        let store = try await backend.open()
        world.servers.append((try await startServer(configuration: configuration, store: store, clock: world.clock).0, store))
        let server = world.servers.count - 1
        var sequence = 0
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                sequence += 1
                #expect(try await world.push(server, notification, messageId: "m-\(sequence)") == 200)
            }
        }
        let token = try world.google.buySubscription(packageName: GooglePlayAPITests.packageName, productId: "premium")
        #expect(try await world.postPurchase(server, "alice", productId: "premium", token: token).status == 200)
        try await deliver()
        world.clock.advance(by: 10 * 86_400_000)
        try world.google.cancel(token)
        try await deliver()
        world.clock.advance(by: 86_400_000)
        let upgraded = try world.google.upgrade(token, to: "premium.plus")
        try await deliver()
        world.clock.advance(by: GooglePlayAPITests.period * 1000)
        try world.google.renew(upgraded)
        try await deliver()

        let reply = try await Loopback.send(
            port: world.servers[server].server.port, "GET", "/v1/events", headers: ["Authorization": APIHarness.reader], body: [])
        #expect(reply.status == 200, "\(reply.text)")
        let events = try #require(reply.json["events"] as? [[String: Any]])
        let types = events.compactMap { $0["type"] as? String }
        #expect(
            types == [
                "subscription.started", "subscription.auto_renew_disabled", "subscription.product_changed", "subscription.renewed",
            ], "\(reply.text)")
        for event in events {
            #expect(event["appUserId"] as? String == "alice")
            #expect(event["originalTransactionId"] as? String == token)
            #expect((event["data"] as? [String: Any])?["store"] as? String == "playStore")
            #expect(event["bundleId"] as? String == GooglePlayAPITests.packageName, "\(event)")
        }
        let changed = events.first { $0["type"] as? String == "subscription.product_changed" }
        #expect((changed?["data"] as? [String: Any])?["to"] as? String == "premium.plus")
        #expect(changed?["entitlements"] as? [String] == ["plus", "pro"])
    }
}
