import Foundation
import Testing

@testable import Storage

/// Webhook deliveries: fan-out from the outbox, leases, per-customer order, outcomes.
@Suite struct WebhookDeliveryStoreTests {
    static let endpoint = "https://hooks.example.com/entitled"
    static let wantsAll: @Sendable (String, String?) -> Bool = { _, _ in true }

    /// A `test`-shaped event of `customer` (each its own id).
    func event(_ id: String, customer: String, type: String = "subscription.renewed") -> OutboxEvent {
        OutboxEvent(
            sequence: 0, id: id, type: type, appUserId: customer, appAccountToken: nil, environment: "Production", bundleId: nil,
            productId: nil, originalTransactionId: nil, entitlements: [], details: [:], cause: "{}", occurredAt: testNow,
            recordedAt: testNow, answer: [])
    }

    func deliveries(_ store: any LedgerStore) throws -> any WebhookDeliveryStore {
        store
    }

    @Test("a new endpoint starts after the newest event; fan-out filters and is idempotent", arguments: Backend.all)
    func fanOut(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let hooks = try deliveries(store)
            _ = try await store.appendEvent(event("evt_before", customer: "u0"))
            #expect(try await hooks.fanOut(endpoint: Self.endpoint, wants: Self.wantsAll, limit: 10, now: testNow) == 0)
            _ = try await store.appendEvent(event("evt_a", customer: "u1"))
            _ = try await store.appendEvent(event("evt_b", customer: "u1", type: "subscription.started"))
            let renewals: @Sendable (String, String?) -> Bool = { type, _ in type == "subscription.renewed" }
            #expect(try await hooks.fanOut(endpoint: Self.endpoint, wants: renewals, limit: 10, now: testNow) == 2)
            #expect(try await hooks.fanOut(endpoint: Self.endpoint, wants: renewals, limit: 10, now: testNow) == 0)
            let listed = try await hooks.deliveries(status: nil, before: nil, limit: 10)
            #expect(listed.map(\.eventId) == ["evt_a"])
            #expect(listed.first?.status == .pending && listed.first?.customerKey == "u1")
        }
    }

    @Test("leases: one claimer per delivery, a customer's next waits for the earlier, an expired lease returns", arguments: Backend.all)
    func leasesAndOrder(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let hooks = try deliveries(store)
            _ = try await hooks.fanOut(endpoint: Self.endpoint, wants: Self.wantsAll, limit: 10, now: testNow)
            for (id, customer) in [("e1", "u1"), ("e2", "u1"), ("e3", "u2"), ("e4", "u3")] {
                _ = try await store.appendEvent(event(id, customer: customer))
            }
            _ = try await hooks.fanOut(endpoint: Self.endpoint, wants: Self.wantsAll, limit: 10, now: testNow)

            // Two claimers at once never share a delivery; u1's e2 waits behind e1.
            let lease = testNow + 15_000
            async let a = hooks.claimDeliveries(endpoint: Self.endpoint, owner: "A", now: testNow, leaseUntil: lease, limit: 2)
            async let b = hooks.claimDeliveries(endpoint: Self.endpoint, owner: "B", now: testNow, leaseUntil: lease, limit: 2)
            let (first, second) = try await (a, b)
            let claimed = (first + second).map(\.event.id)
            #expect(Set(claimed).count == claimed.count)
            #expect(Set(claimed) == ["e1", "e3", "e4"])
            #expect((first + second).allSatisfy { $0.delivery.attempts == 1 && $0.delivery.firstAttemptAt == testNow })

            // Nothing more while the leases hold; another owner cannot finish them.
            #expect(try await hooks.claimDeliveries(endpoint: Self.endpoint, owner: "C", now: testNow + 1, leaseUntil: lease, limit: 9).isEmpty)
            let e1 = try #require((first + second).first { $0.event.id == "e1" })
            let e1Owner = first.contains(e1) ? "A" : "B"
            #expect(try await !hooks.finishDelivery(e1.delivery.id, owner: "C", outcome: .delivered(status: 200), now: testNow))

            // A retry of e1 keeps e2 waiting until e1 is delivered.
            #expect(try await hooks.finishDelivery(
                e1.delivery.id, owner: e1Owner, outcome: .retry(at: testNow + 30_000, status: 500, error: "HTTP 500"), now: testNow))
            #expect(try await hooks.claimDeliveries(endpoint: Self.endpoint, owner: "C", now: testNow + 2, leaseUntil: lease, limit: 9).isEmpty)

            // The other leases expire (their holder died): claimable again, attempt counted.
            let again = try await hooks.claimDeliveries(
                endpoint: Self.endpoint, owner: "C", now: lease, leaseUntil: lease + 15_000, limit: 9)
            #expect(Set(again.map(\.event.id)) == ["e3", "e4"])
            #expect(again.allSatisfy { $0.delivery.attempts == 2 })

            let retried = try #require(
                try await hooks.claimDeliveries(endpoint: Self.endpoint, owner: "C", now: testNow + 30_000, leaseUntil: lease + 30_000, limit: 9)
                    .first)
            #expect(retried.event.id == "e1")
            #expect(try await hooks.finishDelivery(retried.delivery.id, owner: "C", outcome: .delivered(status: 204), now: testNow + 30_000))
            let next = try await hooks.claimDeliveries(
                endpoint: Self.endpoint, owner: "C", now: testNow + 30_001, leaseUntil: lease + 30_000, limit: 9)
            #expect(next.map(\.event.id) == ["e2"])

            // Failed, then retried by hand: pending and due again.
            let e2 = try #require(next.first)
            #expect(try await hooks.finishDelivery(e2.delivery.id, owner: "C", outcome: .failed(status: nil, error: "refused"), now: testNow))
            #expect(try await hooks.deliveries(status: .failed, before: nil, limit: 10).map(\.eventId) == ["e2"])
            #expect(try await hooks.webhookStatus(endpoints: [Self.endpoint, "https://other.example/hook"]) == [
                WebhookEndpointStatus(endpoint: Self.endpoint, pending: 2, failed: 1, lastDeliveredAt: testNow + 30_000),
                WebhookEndpointStatus(endpoint: "https://other.example/hook", pending: 0, failed: 0, lastDeliveredAt: nil),
            ])
            // One customer's deliveries, newest first, bounded; another endpoint has none.
            let u1 = try await hooks.deliveries(customerKey: "u1", endpoints: [Self.endpoint, "https://other.example/hook"], limit: 10)
            #expect(u1.map(\.eventId) == ["e2", "e1"])
            #expect(try await hooks.deliveries(customerKey: "u1", endpoints: [Self.endpoint], limit: 1).map(\.eventId) == ["e2"])
            let reset = try #require(try await hooks.retryDelivery(e2.delivery.id, now: testNow + 40_000))
            #expect(reset.status == .pending && reset.nextAttemptAt == testNow + 40_000 && reset.firstAttemptAt == nil)
            #expect(try await hooks.retryDelivery(999_999, now: testNow) == nil)
            #expect(try await hooks.pendingDeliveries() == [Self.endpoint: 3])
            let delivered = try await hooks.deliveries(status: .delivered, before: nil, limit: 10)
            #expect(delivered.map(\.eventId) == ["e1"] && delivered.first?.lastStatus == 204)
        }
    }
}
