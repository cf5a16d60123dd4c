import Foundation
import Testing

@testable import Storage

/// Offerings and targeting (`offerings`, `paywall_settings`, `paywall_changes`) on every backend.
@Suite struct OfferingStoreTests {
    struct Refused: Error {}

    @Test("every change is a new version, logged with its actor; a refused change writes nothing", arguments: Backend.all)
    func changesAreVersioned(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            #expect(try await store.paywallVersion() == 0)
            #expect(try await store.paywall() == PaywallSnapshot())
            let first = try await store.changePaywall(actor: "admin", now: 10) { before in
                #expect(before.version == 0)
                return [.putOffering(id: "default", document: #"{"a":1}"#), .setCurrent(offeringId: "default")]
            }
            #expect(first.version == 2)
            #expect(first.offerings == [StoredOffering(id: "default", document: #"{"a":1}"#, version: 1, updatedAt: 10)])
            #expect(first.current == "default")
            let second = try await store.changePaywall(actor: "ops", now: 20) { _ in
                [.putOffering(id: "default", document: #"{"a":2}"#), .putOffering(id: "sale", document: "{}"), .setTargeting(document: "[]")]
            }
            #expect(second.version == 5)
            #expect(second.offerings.map(\.id) == ["default", "sale"])
            #expect(second.offering("default")?.version == 3)
            #expect(second.offering("default")?.document == #"{"a":2}"#)
            #expect(second.targeting == "[]")
            #expect(try await store.paywallVersion() == 5)
            #expect(try await store.paywall() == second)
            // A refusal leaves everything as it was.
            await #expect(throws: Refused.self) {
                _ = try await store.changePaywall(actor: nil, now: 30) { _ in throw Refused() }
            }
            #expect(try await store.paywall() == second)
            // No change: no new version.
            #expect(try await store.changePaywall(actor: nil, now: 30) { _ in [] } == second)
            let third = try await store.changePaywall(actor: "ops", now: 40) { _ in [.deleteOffering(id: "sale")] }
            #expect(third.version == 6)
            #expect(third.offerings.map(\.id) == ["default"])
            #expect(try await store.count("SELECT COUNT(*) FROM paywall_changes") == 6)
            #expect(try await store.count("SELECT COUNT(*) FROM paywall_changes WHERE actor = 'ops' AND kind = 'offeringDeleted'") == 1)
        }
    }

    @Test("concurrent changes each decide on what the previous one left", arguments: Backend.all)
    func concurrentChangesSerialize(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            // Each change appends one character to the document it read: none is lost.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        _ = try await store.changePaywall(actor: nil, now: Int64(index)) { before in
                            [.setTargeting(document: (before.targeting ?? "") + "x")]
                        }
                    }
                }
                try await group.waitForAll()
            }
            let after = try await store.paywall()
            #expect(after.targeting == String(repeating: "x", count: 8))
            #expect(after.version == 8)
        }
    }
}
