import AppStore
import EntitledConfig
@testable import EntitledServer
@testable import EntitledTestSupport
import Foundation
import GooglePlay
import GooglePlaySimulator
import HTTPClient
import HTTPServer
@testable import Storage
import Testing

/// `googlePlay.voidedPurchasesPollMinutes`: the voided-purchases list of the fake Google stores
/// what no notification told, stores nothing a notification told, runs at most once per interval
/// across servers, and keeps its window when Google fails; on SQLite and PostgreSQL.
@Suite(.serialized) struct PlayVoidedPollTests {
    typealias Served = PlayAcknowledgementTests.Served

    static func answer(_ served: Served, _ customer: String = "alice") async throws -> Loopback.Reply {
        try await Loopback.send(port: served.server.port, "GET", "/v1/customers/\(customer)", headers: ["Authorization": APIHarness.writer])
    }

    static func status(_ reply: Loopback.Reply, _ entitlement: String) -> String? {
        GooglePlayAPITests.entitlement(reply, entitlement)?["status"] as? String
    }

    static func factCount(_ store: any LedgerStore) async throws -> Int64 {
        if let sqlite = store as? SQLiteStore { return try await sqlite._scalar("SELECT COUNT(*) FROM facts") }
        return try await #require(store as? PostgresStore)._scalar("SELECT COUNT(*) FROM facts")
    }

    static func report(listed: Int, new: Int, known: Int) -> PlayVoidedReport {
        var report = PlayVoidedReport()
        (report.listed, report.new, report.known) = (listed, new, known)
        return report
    }

    static func committed(_ result: PlayVoidedPollResult) -> PlayVoidedReport? {
        guard case .committed(_, let report) = result else { return nil }
        return report
    }

    /// A revocation whose notifications were lost is found by the poll: the purchase ends refunded.
    /// The next pass, an interval later, lists it again (the window overlaps) and stores nothing.
    @Test(arguments: StoredBackend.all)
    func aVoidingNoNotificationToldIsStored(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let poll = try #require(served.assembled.playVoidedPolls.first)
        #expect(poll.everyMinutes == 60)
        // It runs in the one service lifecycle of serve and dev.
        #expect(served.assembled.services.contains { ($0 as? PlayVoidedPoll)?.name == "google-play-voided:com.example.android" })
        let token = try await served.postNewSubscription(world)
        #expect(Self.committed(try await poll.runOnce()) == Self.report(listed: 0, new: 0, known: 0))

        world.clock.advance(by: 30 * 60_000)
        try world.google.revoke(token, reason: 7)
        _ = world.google.takeNotifications()
        #expect(Self.status(try await Self.answer(served), "pro") == "active")
        // Not due before its interval has passed.
        #expect(try await poll.runOnce() == .notDue)
        world.clock.advance(by: 30 * 60_000)
        #expect(Self.committed(try await poll.runOnce()) == Self.report(listed: 1, new: 1, known: 0))
        #expect(Self.status(try await Self.answer(served), "pro") == "refunded")

        let facts = try await Self.factCount(served.store)
        world.clock.advance(by: 30 * 60_000)
        #expect(try await poll.runOnce() == .notDue)
        world.clock.advance(by: 30 * 60_000)
        #expect(Self.committed(try await poll.runOnce()) == Self.report(listed: 1, new: 0, known: 1))
        #expect(try await Self.factCount(served.store) == facts)
        let metrics = served.assembled.metrics.registry.render()
        #expect(metrics.contains(#"entitled_play_voided_polls_total{app="com.example.android",outcome="ok"} 3"#), "\(metrics)")
        #expect(metrics.contains(#"entitled_play_voided_found_total{app="com.example.android"} 1"#), "\(metrics)")
    }

    /// A voiding a notification told is known to the poll, and one the poll stored first is known
    /// to the notification: either way one fact.
    @Test(arguments: StoredBackend.all)
    func aVoidingIsStoredOnceWhicheverWayItCameFirst(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let poll = try #require(served.assembled.playVoidedPolls.first)
        let pusher = FakePubSubPusher(
            google: world.google, endpoint: URL(string: "http://127.0.0.1:\(served.server.port)/v1/google/notifications")!,
            identity: .init(audience: PlayWorld.audience, serviceAccountEmail: PlayWorld.pushAccount), transport: CurlHTTP())
        func push(_ notifications: [DeveloperNotification], _ prefix: String) async throws {
            for (index, notification) in notifications.enumerated() {
                #expect(try await CurlHTTP().send(try pusher.request(for: notification, messageId: "\(prefix)-\(index)")).status == 200)
            }
        }
        let told = try await served.postNewSubscription(world)
        let untold = try world.google.buyProduct(packageName: PlayWorld.packageName, productId: "lifetime")
        #expect(try await served.post("lifetime", untold).status == 200)
        _ = world.google.takeNotifications()
        world.clock.advance(by: 3_600_000)

        // The subscription's revocation is pushed before the poll runs.
        try world.google.revoke(told)
        try await push(world.google.takeNotifications(), "told")
        let afterPush = try await Self.factCount(served.store)
        // The product's refund reaches the poll first, its notification later.
        try world.google.refundProduct(untold)
        let late = world.google.takeNotifications()
        #expect(Self.committed(try await poll.runOnce()) == Self.report(listed: 2, new: 1, known: 1))
        #expect(try await Self.factCount(served.store) == afterPush + 1)
        try await push(late, "late")
        #expect(try await Self.factCount(served.store) == afterPush + 1)
        let reply = try await Self.answer(served)
        #expect(Self.status(reply, "pro") == "refunded", "\(reply.text)")
        #expect(Self.status(reply, "extras") == "refunded", "\(reply.text)")
    }

    /// Two servers on one database: one pass per interval between them.
    @Test(arguments: StoredBackend.all)
    func serversShareOnePassPerInterval(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let other = try await buildApplication(configuration: world.configuration, clock: world.clock, store: served.store, apiSleeper: NoWait())
        let (first, second) = (try #require(served.assembled.playVoidedPolls.first), try #require(other.playVoidedPolls.first))
        #expect(Self.committed(try await first.runOnce()) != nil)
        #expect(try await second.runOnce() == .notDue)
        world.clock.advance(by: 60 * 60_000)
        #expect(Self.committed(try await second.runOnce()) != nil)
        #expect(try await first.runOnce() == .notDue)
    }

    /// Google failing fails the pass: the watermark stays, and the retry (after a backoff shorter
    /// than the interval) reads the same window.
    @Test(arguments: StoredBackend.all)
    func aFailedPassIsRetriedOverItsWindow(_ backend: StoredBackend) async throws {
        let world = try PlayWorld()
        let served = try await Served(world, backend)
        defer { Task { await served.close(); await world.close() } }
        let poll = try #require(served.assembled.playVoidedPolls.first)
        let token = try await served.postNewSubscription(world)
        #expect(Self.committed(try await poll.runOnce()) != nil)
        world.clock.advance(by: 60 * 60_000)
        try world.google.revoke(token)
        _ = world.google.takeNotifications()

        world.google.failNextCalls(status: 503, count: 5)
        await #expect(throws: PlayVoidedPollError.self) { try await poll.runOnce() }
        #expect(try await poll.runOnce() == .notDue, "not due before its backoff")
        world.clock.advance(by: 60_000)
        #expect(Self.committed(try await poll.runOnce()) == Self.report(listed: 1, new: 1, known: 0))
        #expect(Self.status(try await Self.answer(served), "pro") == "refunded")
    }
}
