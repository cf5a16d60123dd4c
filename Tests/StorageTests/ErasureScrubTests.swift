import AppStoreTesting
import Entitlements
import Foundation
import Testing

@testable import Storage

/// An erased id named by another customer's events: the `customer.transferred` event of the
/// customer a subscription moved to names its previous owner.
@Suite("Erasure scrubs the id from other customers' events")
struct ErasureScrubTests {
    @Test(arguments: Backend.all)
    func transferredEventForgetsAnErasedPreviousOwner(backend: Backend) async throws {
        try await withStore(backend, now: testNow + day) { store, _ in
            let fact = Fixture.transaction(otid: "moved", tid: "moved-1", expires: testNow + 10 * day, signed: testNow - day)
            for owner in ["gone-owner", "new-owner"] {
                _ = try await store.ingest(
                    Fixture.batch(uuid: nil, facts: [fact], source: .client, claim: Claim(appUserId: owner, behaviour: .transfer)),
                    projector: testProjector, now: testNow)
            }
            let before = try await store.events(after: 0, limit: 1000).filter { $0.type == "customer.transferred" }
            #expect(before.map(\.details) == [["from": "gone-owner"]])
            #expect(before.map(\.appUserId) == ["new-owner"])

            _ = try #require(try await store.directory.eraseCustomer(appUserId: "gone-owner", actor: nil, now: testNow))

            // The new owner's event stays, without the erased id; only the notice names it.
            let events = try await store.events(after: 0, limit: 1000)
            let transferred = events.filter { $0.type == "customer.transferred" }
            #expect(transferred.map(\.id) == before.map(\.id))
            #expect(transferred.map(\.details) == [[:]])
            #expect(events.filter { $0.appUserId == "gone-owner" || $0.details.values.contains("gone-owner") }.map(\.type) == ["customer.deleted"])
            let export = try #require(try await store.directory.exportCustomer(appUserId: "new-owner"))
            let exported = export.tables.flatMap(\.rows).flatMap { $0 }.compactMap { cell -> String? in
                if case .text(let text) = cell.value { return text }
                return nil
            }
            #expect(!exported.isEmpty)
            #expect(!exported.contains { $0.contains("gone-owner") })
            let tables = try await CustomerDirectoryTests.tables(in: store)
            #expect(try await CustomerDirectoryTests.occurrences(of: "gone-owner", in: store, tables: tables.subtracting(["events"])) == 0)

            #expect(try await store.scrubErasureEvents(recordedBefore: testNow + 1) == 1)
            #expect(try await CustomerDirectoryTests.occurrences(of: "gone-owner", in: store) == 0)
        }
    }
}
