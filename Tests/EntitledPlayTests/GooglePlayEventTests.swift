import EntitledConfig
import EntitledServer
@testable import EntitledTestSupport
import Foundation
import GooglePlaySimulator
import Testing

/// A Play customer's events in the feed, end to end: the fake Google pushes to
/// `POST /v1/google/notifications`, and `GET /v1/events` lists what happened, with `store: playStore`.
@Suite(.serialized) struct GooglePlayEventTests {
    @Test(arguments: StoredBackend.all)
    func pushedLifecycleShowsInTheFeed(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        // Events at the commit (no settle window), so the feed shows them as the pushes land; a
        // webhook endpoint receives them too.
        let receiver = try WebhookReceiver(failing: 0)
        defer { Task { await receiver.shutdown() } }
        var configuration = world.configuration
        configuration.events.settleSeconds = 0
        configuration.webhooks = [
            WebhookEndpoint(
                url: receiver.url, secretKey: try #require(WebhookSecret.key(WebhookReceiver.secret)), timeoutSeconds: 5,
                retryScheduleSeconds: [30], maxRetryHours: 72)
        ]
        let store = try await backend.open()
        let assembled = try await buildApplication(configuration: configuration, clock: world.clock, store: store, fastPaths: testFastPaths)
        world.servers.append((try startQuietServer(router: assembled.application.router), store))
        let server = world.servers.count - 1
        let dispatcher = try #require(assembled.application.webhooks)
        try await dispatcher.runDue()  // the endpoint starts here: later events are its
        var sequence = 0
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                sequence += 1
                #expect(try await world.push(server, notification, messageId: "m-\(sequence)") == 200)
            }
        }
        let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        #expect(try await world.postPurchase(server, "alice", productId: "premium", token: token).status == 200)
        try await deliver()
        world.clock.advance(by: 10 * 86_400_000)
        try world.google.cancel(token)
        try await deliver()
        world.clock.advance(by: 86_400_000)
        let upgraded = try world.google.upgrade(token, to: "premium.plus")
        try await deliver()
        world.clock.advance(by: PlayWorld.period * 1000)
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
            #expect(event["bundleId"] as? String == PlayWorld.packageName, "\(event)")
        }
        // The webhook carries the same events, in order.
        try await dispatcher.runDue()
        let delivered = try receiver.deliveries.map { try #require(JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]) }
        #expect(delivered.compactMap { $0["type"] as? String } == types)
        #expect(delivered.allSatisfy { ($0["data"] as? [String: Any])?["store"] as? String == "playStore" })
        let changed = events.first { $0["type"] as? String == "subscription.product_changed" }
        #expect((changed?["data"] as? [String: Any])?["to"] as? String == "premium.plus")
        #expect(changed?["entitlements"] as? [String] == ["plus", "pro"])
    }

    /// A pause and Google's resumption (the fake's sweep) reach the feed as `paused`, then the
    /// new period's `renewed` and `resumed` at the resume time.
    @Test(arguments: StoredBackend.all)
    func pauseAndResumeShowInTheFeed(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        defer { Task { await world.close() } }
        let assembled = try await world.startFeedServer(backend)
        var sequence = 0
        func deliver() async throws {
            for notification in world.google.takeNotifications() {
                sequence += 1
                #expect(try await world.push(0, notification, messageId: "p-\(sequence)") == 200)
            }
        }
        let token = try world.google.buySubscription(packageName: PlayWorld.packageName, productId: "premium")
        #expect(try await world.postPurchase(0, "alice", productId: "premium", token: token).status == 200)
        try await deliver()
        // Acknowledged, or Google would refund it after three days.
        _ = try await #require(assembled.application.jobRunner).runDue()
        world.clock.advance(by: 10 * 86_400_000)
        let resumeAt = world.clock.nowMilliseconds() + 40 * 86_400_000
        try world.google.pause(token, resumeAtMillis: resumeAt)
        try await deliver()
        world.clock.advance(by: 41 * 86_400_000)
        world.google.sweep()
        try await deliver()

        let reply = try await Loopback.send(
            port: world.servers[0].server.port, "GET", "/v1/events", headers: ["Authorization": APIHarness.reader], body: [])
        let events = try #require(reply.json["events"] as? [[String: Any]])
        #expect(
            events.compactMap { $0["type"] as? String }
                == ["subscription.started", "subscription.paused", "subscription.renewed", "subscription.resumed"], "\(reply.text)")
        let paused = events.first { $0["type"] as? String == "subscription.paused" }
        #expect((paused?["data"] as? [String: Any])?["resumesAt"] as? String == String(resumeAt), "\(reply.text)")
        let resumed = events.first { $0["type"] as? String == "subscription.resumed" }
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(resumed?["occurredAt"] as? String == format.string(from: Date(timeIntervalSince1970: Double(resumeAt) / 1000)), "\(reply.text)")
    }
}
