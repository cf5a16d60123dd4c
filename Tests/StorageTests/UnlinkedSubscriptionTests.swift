import Entitlements
import Foundation
import Testing

@testable import Storage

/// A purchase without an `appAccountToken`, before any customer claims it: answered, searchable,
/// counted and producing events (naming nobody), then moved to the customer that claims it.
@Suite struct UnlinkedSubscriptionTests {
    static let projector = MetricRollupTests.projector
    static let day = MetricRollupTests.day
    static let day0 = MetricRollupTests.day0

    /// Apple's notification of a purchase with no token: nobody has claimed it.
    static func unlinkedPurchase(_ store: any LedgerStore) async throws -> IngestResult {
        try await store.ingest(
            Fixture.batch(facts: [
                Fixture.transaction(otid: "u-1", tid: "u-1", expires: testNow + 30 * day, signed: testNow),
                Fixture.renewal(otid: "u-1", autoRenew: true, signed: testNow + 1),
            ]), projector: projector, now: testNow)
    }

    /// The overview counts unlinked subscriptions through the index on `app_user_id`: with a LIKE
    /// over a bound pattern SQLite scanned every customer, which at a million customers cost the
    /// overview most of its time.
    @Test func sqliteFindsUnlinkedCustomersByTheirIndex() async throws {
        let database = try TestDatabase(.sqliteFile)
        let store = try #require(try await database.open() as? any SessionBackedStore)
        let plan = try await store.read { session in
            try session.query(
                "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM customers c WHERE \(Ledger.isUnlinked("c.app_user_id", .sqlite))"
            ).map { try $0.decode(PlanRow.self).detail }
        }
        await store.close()
        await database.destroy()
        #expect(plan.contains { $0.hasPrefix("SEARCH c USING") && $0.contains("app_user_id") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
    }

    struct PlanRow: Decodable { var detail: String }

    /// The app posts the unlinked transaction for the customer of `claim`.
    static func appPosts(_ store: any LedgerStore, as claim: Claim) async throws -> IngestResult {
        try await store.ingest(
            Fixture.batch(
                uuid: nil, facts: [Fixture.transaction(otid: "u-1", tid: "u-1", expires: testNow + 30 * day, signed: testNow)],
                source: .client, claim: claim),
            projector: projector, now: testNow + 1000)
    }

    @Test("an unlinked purchase is answered, searchable, counted, with events naming nobody", arguments: Backend.all)
    func unlinkedIsVisible(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let result = try await Self.unlinkedPurchase(store)
            #expect(result.status == .accepted && result.affectedCustomers.isEmpty)

            let owned = try #require(try await store.subscription(originalTransactionId: "u-1"))
            #expect(UnlinkedSubscription.isKey(owned.appUserId))
            #expect(owned.subscription.status == "active")

            let console = store
            let found = try await console.searchCustomers("u-1", after: nil, limit: 10)
            #expect(found.map(\.appUserId) == [UnlinkedSubscription.key("u-1")])
            // Never listed by a prefix: the key is no appUserId.
            #expect(try await console.searchCustomers("", after: nil, limit: 10).isEmpty)

            let rollup = try await console.metricRollup(environment: "Production", fromDay: Self.day0 - 1, toDay: Self.day0 + 90)
            #expect(rollup.unlinkedActive == 1)
            #expect(MetricRollupTests.value(rollup, .activeSubscriptions, on: Self.day0) == 1)
            #expect(MetricRollupTests.value(rollup, .newSubscriptions, on: Self.day0) == 1)

            let events = try await store.events(after: 0, limit: 100)
            #expect(events.map(\.type).contains("subscription.started"))
            #expect(events.allSatisfy { $0.appUserId == nil && $0.appAccountToken == nil && $0.originalTransactionId == "u-1" })
        }
    }

    @Test("the app posting an unlinked transaction links it; later events name the customer", arguments: Backend.all)
    func claimLinksIt(backend: Backend) async throws {
        try await withStore(backend, now: testNow + Self.day) { store, _ in
            _ = try await Self.unlinkedPurchase(store)
            let before = try await store.events(after: 0, limit: 100).count
            // Linked, not transferred: a placeholder is nobody to transfer from.
            let claim = try await Self.appPosts(store, as: Claim(appUserId: "alice"))
            #expect(claim.links == [LinkResult(originalTransactionId: "u-1", outcome: .linked)])
            #expect(claim.affectedCustomers == ["alice"])
            #expect(try await store.subscription(originalTransactionId: "u-1")?.appUserId == "alice")
            #expect(try await store.projection(appUserId: "alice")?.projection.subscriptions.count == 1)

            let console = store
            #expect(try await console.searchCustomers("u-1", after: nil, limit: 10).map(\.appUserId) == ["alice"])
            let rollup = try await console.metricRollup(environment: "Production", fromDay: Self.day0 - 1, toDay: Self.day0 + 90)
            #expect(rollup.unlinkedActive == 0)
            #expect(MetricRollupTests.value(rollup, .activeSubscriptions, on: Self.day0) == 1)
            #expect(MetricRollupTests.value(rollup, .newSubscriptions, on: Self.day0) == 1, "moved, not bought again")
            #expect(MetricRollupTests.value(rollup, .churned, on: Self.day0) == 0)

            let all = try await store.events(after: 0, limit: 100)
            let linked = all.dropFirst(before)
            #expect(!linked.contains { $0.type == "customer.transferred" })
            // The placeholder's events did not happen to anybody else: one correction supersedes
            // them, and alice's follow.
            let correction = try #require(linked.first { $0.type == EventType.correction.rawValue })
            #expect(correction.appUserId == nil && correction.originalTransactionId == "u-1")
            #expect(correction.details["supersedes"]?.split(separator: ",").map(String.init).sorted() == all.prefix(before).map(\.id).sorted())
            #expect(linked.filter { $0.type != EventType.correction.rawValue }.allSatisfy { $0.appUserId == "alice" })
            #expect(linked.map(\.type).filter { $0 == EventType.subscriptionStarted.rawValue }.count == 1)

            // Apple renews it: the event names alice.
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "u-1", tid: "u-2", expires: testNow + 60 * Self.day, signed: testNow + Self.day)]),
                projector: Self.projector, now: testNow + Self.day)
            let renewed = try await store.events(after: 0, limit: 100).filter { $0.type == "subscription.renewed" }
            #expect(renewed.map(\.appUserId) == ["alice"])
        }
    }

    @Test("a claim under an alias links the unlinked subscription to the merged customer", arguments: Backend.all)
    func aliasClaimsIt(backend: Backend) async throws {
        try await withStore(backend, now: testNow + Self.day) { store, _ in
            _ = try await store.directory.addAlias("alice-phone", to: "alice", actor: nil, projector: Self.projector, now: testNow)
            _ = try await Self.unlinkedPurchase(store)
            let claim = try await Self.appPosts(store, as: Claim(appUserId: "alice-phone", behaviour: .keep))
            #expect(claim.links == [LinkResult(originalTransactionId: "u-1", outcome: .linked)])
            #expect(try await store.subscription(originalTransactionId: "u-1")?.appUserId == "alice")
        }
    }

    @Test("a customer created with the token of a placeholder's subscription takes it", arguments: Backend.all)
    func tokenCustomerTakesIt(backend: Backend) async throws {
        let token = "cccccccc-0000-4000-8000-000000000003"
        try await withStore(backend, now: testNow + Self.day) { store, _ in
            _ = try await Self.unlinkedPurchase(store)
            // A later fact of the subscription carries a token; its customer appears afterwards.
            _ = try await store.ingest(
                Fixture.batch(facts: [
                    Fixture.transaction(otid: "u-1", tid: "u-2", expires: testNow + 60 * Self.day, signed: testNow + Self.day, token: token)
                ]), projector: Self.projector, now: testNow + Self.day)
            #expect(try await store.subscription(originalTransactionId: "u-1").map { UnlinkedSubscription.isKey($0.appUserId) } == true)
            _ = try await store.ensureCustomer(appUserId: "carol", appAccountToken: token, projector: Self.projector, now: testNow + Self.day)
            #expect(try await store.subscription(originalTransactionId: "u-1")?.appUserId == "carol")
        }
    }

    /// A purchase (carrying the token from its first fact, or only from its renewal) and its
    /// renewal, for the customer whose token is `token`.
    static func tokenHistory(_ store: any LedgerStore, token: String, tokenFirst: Bool, projector: Projector) async throws {
        _ = try await store.ingest(
            Fixture.batch(facts: [
                Fixture.transaction(otid: "u-1", tid: "u-1", expires: testNow + 30 * day, signed: testNow, token: tokenFirst ? token : nil),
                Fixture.renewal(otid: "u-1", autoRenew: true, signed: testNow + 1),
            ]), projector: projector, now: testNow)
        _ = try await store.ingest(
            Fixture.batch(facts: [
                Fixture.transaction(otid: "u-1", tid: "u-2", expires: testNow + 60 * day, signed: testNow + 30 * day, token: token)
            ]), projector: projector, now: testNow + 30 * day)
    }

    @Test(
        "a customer created after its token's purchase gets the stream it would have had first",
        arguments: Backend.all, [true, false])
    func tokenCustomerCreatedLateGetsTheSameStream(backend: Backend, tokenFirst: Bool) async throws {
        let token = "cccccccc-0000-4000-8000-000000000004"
        var held = Self.projector
        held.eventHold = EventHold(settleSeconds: 5, maxHoldSeconds: 300)
        for projector in [Self.projector, held] {
            var streams: [[String]] = []
            for customerFirst in [true, false] {
                try await withStore(backend, now: testNow + 40 * Self.day) { store, _ in
                    let holds = try #require(store as? any EventHoldStore)
                    if customerFirst {
                        _ = try await store.ensureCustomer(appUserId: "carol", appAccountToken: token, projector: projector, now: testNow - 1000)
                    }
                    try await Self.tokenHistory(store, token: token, tokenFirst: tokenFirst, projector: projector)
                    _ = try await holds.releaseEventHolds(projector: projector, now: testNow + 31 * Self.day - 1, limit: 10)
                    if !customerFirst {
                        let released = try await store.events(after: 0, limit: 100)
                        // Untokened, the purchase's events were released naming nobody; tokened, they wait.
                        #expect(released.isEmpty == tokenFirst && released.allSatisfy { $0.appUserId == nil })
                        _ = try await store.ensureCustomer(appUserId: "carol", appAccountToken: token, projector: projector, now: testNow + 31 * Self.day)
                        #expect(try await store.subscription(originalTransactionId: "u-1")?.appUserId == "carol")
                        // Under a hold, the claim's events wait for its release too.
                        #expect(try await store.events(after: 0, limit: 100).count == released.count || projector.eventHold == nil)
                        _ = try await holds.releaseEventHolds(projector: projector, now: testNow + 32 * Self.day, limit: 10)
                    }
                    streams.append(EventStreamPropertyTests.said(try await store.events(after: 0, limit: 100).net))
                }
            }
            #expect(streams[0].contains { $0.hasPrefix("carol \(EventType.subscriptionStarted.rawValue) @\(testNow) ") })
            #expect(streams[0].contains { $0.hasPrefix("carol \(EventType.subscriptionRenewed.rawValue) ") })
            #expect(streams[1] == streams[0], "hold: \(projector.eventHold != nil)")
        }
    }

    @Test("subscriptions stored before placeholders existed get theirs once: answered, searchable, counted", arguments: Backend.all)
    func backfillOfOldFacts(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            _ = try await Self.unlinkedPurchase(store)
            // The ledger as an older build left it: the facts, and nobody owning them.
            for table in [
                "events", "entitlement_projections", "subscription_projections", "customer_states", "customer_metrics", "metric_daily",
                "rollup_journal", "links", "customers", "placeholder_backfill",
            ] {
                try await store.raw("DELETE FROM \(table)")
            }
            try await store.raw("INSERT INTO placeholder_backfill (after_id) VALUES (0)")
            #expect(try await store.subscription(originalTransactionId: "u-1") == nil)

            let backfill = store
            // One fact per chunk: the pass resumes where the previous chunk stopped.
            var created = 0
            while true {
                let (count, more) = try await backfill.backfillPlaceholders(projector: Self.projector, now: testNow, limit: 1)
                created += count
                if !more { break }
            }
            #expect(created == 1)
            #expect(try await store.count("SELECT COUNT(*) FROM placeholder_backfill") == 0)

            let owned = try #require(try await store.subscription(originalTransactionId: "u-1"))
            #expect(owned.appUserId == UnlinkedSubscription.key("u-1") && owned.subscription.status == "active")
            let console = store
            #expect(try await console.searchCustomers("u-1", after: nil, limit: 10).map(\.appUserId) == [UnlinkedSubscription.key("u-1")])
            let rollup = try await console.metricRollup(environment: "Production", fromDay: Self.day0 - 1, toDay: Self.day0 + 90)
            #expect(rollup.unlinkedActive == 1)
            #expect(MetricRollupTests.value(rollup, .activeSubscriptions, on: Self.day0) == 1)
            // No events: that history is older than the outbox.
            #expect(try await store.events(after: 0, limit: 100).isEmpty)
            // Done once: a later start reads nothing.
            #expect(try await backfill.backfillPlaceholders(projector: Self.projector, now: testNow, limit: 1) == (0, false))

            // A later claim links it as any placeholder's.
            let claim = try await Self.appPosts(store, as: Claim(appUserId: "alice"))
            #expect(claim.links == [LinkResult(originalTransactionId: "u-1", outcome: .linked)])
        }
    }

    @Test("a new database has no placeholder pass to make", arguments: Backend.all)
    func noBackfillOnAnEmptyLedger(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            #expect(try await store.count("SELECT COUNT(*) FROM placeholder_backfill") == 0)
            _ = try await Self.unlinkedPurchase(store)
            let backfill = store
            #expect(try await backfill.backfillPlaceholders(projector: Self.projector, now: testNow, limit: 10) == (0, false))
        }
    }
}
