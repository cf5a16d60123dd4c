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
            let claim = try await store.ingest(
                Fixture.batch(
                    uuid: nil, facts: [Fixture.transaction(otid: "u-1", tid: "u-1", expires: testNow + 30 * Self.day, signed: testNow)],
                    source: .client, claim: Claim(appUserId: "alice")),
                projector: Self.projector, now: testNow + 1000)
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

            let linked = try await store.events(after: 0, limit: 100).dropFirst(before)
            #expect(!linked.contains { $0.type == "customer.transferred" })
            #expect(linked.allSatisfy { $0.appUserId == "alice" })

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
            let claim = try await store.ingest(
                Fixture.batch(
                    uuid: nil, facts: [Fixture.transaction(otid: "u-1", tid: "u-1", expires: testNow + 30 * Self.day, signed: testNow)],
                    source: .client, claim: Claim(appUserId: "alice-phone", behaviour: .keep)),
                projector: Self.projector, now: testNow + 1000)
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
}
