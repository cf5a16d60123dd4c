import Entitlements
import Foundation
import Testing

@testable import Storage

/// `customer.merged` and `customer.deleted`: written with the change, and the erased ids scrubbed
/// from the deleted event once its deliveries settled.
@Suite struct CustomerEventTests {
    static let endpoint = "https://hooks.example/a"
    static let wantsAll: @Sendable (String, String?) -> Bool = { _, _ in true }

    func events(_ store: any LedgerStore, _ type: String) async throws -> [OutboxEvent] {
        try await store.events(after: 0, limit: 1000).filter { $0.type == type }
    }

    @Test("an alias is a customer.merged event, once; a repeated alias adds none", arguments: Backend.all)
    func merged(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            _ = try await store.directory.addAlias("b", to: "a", actor: nil, projector: testProjector, now: testNow)
            _ = try await store.directory.addAlias("b", to: "a", actor: nil, projector: testProjector, now: testNow + 1)
            let merged = try await events(store, "customer.merged")
            #expect(merged.count == 1)
            #expect(merged.first?.appUserId == "a")
            #expect(merged.first?.details == ["alias": "b", "outcome": "added"])
            let answer = String(decoding: merged.first?.answer ?? [], as: UTF8.self)
            #expect(answer.contains(#""appUserId":"a""#))
        }
    }

    @Test("an erasure is a customer.deleted event naming the ids until its delivery settles", arguments: Backend.all)
    func deletedThenScrubbed(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let hooks = store
            _ = try await store.directory.addAlias("gone-alias", to: "gone", actor: nil, projector: testProjector, now: testNow)
            // An endpoint is configured: its cursor starts at the newest event.
            _ = try await hooks.fanOut(endpoint: Self.endpoint, wants: Self.wantsAll, limit: 10, now: testNow)
            _ = try await store.directory.eraseCustomer(appUserId: "gone-alias", actor: "ops", now: testNow)
            let deleted = try #require(try await events(store, "customer.deleted").first)
            #expect(deleted.appUserId == "gone")
            #expect(deleted.details == ["aliases": #"["gone-alias"]"#])
            #expect(!deleted.id.isEmpty)
            #expect(try await events(store, "customer.merged").isEmpty)  // went with the customer
            // Not yet fanned out to the endpoint: kept.
            #expect(try await store.scrubErasureEvents(recordedBefore: testNow + 1) == 0)
            #expect(try await hooks.fanOut(endpoint: Self.endpoint, wants: Self.wantsAll, limit: 10, now: testNow) == 1)
            // Its delivery is pending: kept.
            #expect(try await store.scrubErasureEvents(recordedBefore: testNow + 1) == 0)
            let claimed = try await hooks.claimDeliveries(endpoint: Self.endpoint, owner: "w", now: testNow, leaseUntil: testNow + 60_000, limit: 10)
            #expect(claimed.map(\.event.appUserId) == ["gone"])
            let delivery = try #require(claimed.first).delivery
            #expect(try await hooks.finishDelivery(delivery.id, owner: "w", outcome: .delivered(status: 204), now: testNow))
            // Settled, but recorded within the retention: kept.
            #expect(try await store.scrubErasureEvents(recordedBefore: testNow) == 0)
            #expect(try await store.scrubErasureEvents(recordedBefore: testNow + 1) == 1)
            let scrubbed = try #require(try await events(store, "customer.deleted").first)
            #expect(scrubbed.id == deleted.id && scrubbed.appUserId == nil && scrubbed.appAccountToken == nil)
            #expect(scrubbed.details == ["erased": "true"])
            #expect(try await CustomerDirectoryTests.occurrences(of: "gone", in: store) == 0)
            #expect(try await store.scrubErasureEvents(recordedBefore: testNow + 1) == 0)
        }
    }
}
