import Entitlements
import Foundation
import Testing

@testable import Storage

/// The state storage evaluates and keeps: a projector's `grantEnvironments` merged, or the
/// customer's primary environment alone.
@Suite("Merged state documents")
struct MergedDocumentTests {
    static let policy = Projector(entitlements: ["com.example.pro": "pro", "com.example.plus": "plus"]).policy

    @Test(
        "the document merges the projector's environments; without them it is the primary one's",
        arguments: [
            (grant: nil, entitlements: ["pro"]),
            (grant: [Environment.production, .sandbox], entitlements: ["pro", "plus"]),
            (grant: [Environment.sandbox], entitlements: ["plus"]),
        ] as [([Environment]?, [String])])
    func document(grant: [Environment]?, entitlements: [String]) async throws {
        let database = try TestDatabase(.sqliteMemory)
        let store = try await database.open()
        let projector = Projector(policy: Self.policy, grantEnvironments: grant)
        let customer = try await store.ensureCustomer(appUserId: "m", appAccountToken: nil, projector: projector, now: testNow)
        let facts = [
            Fixture.transaction(otid: "p1", tid: "p1", expires: testNow + day, signed: testNow, token: customer.appAccountToken),
            Fixture.transaction(
                otid: "s1", tid: "s1", product: "com.example.plus", expires: testNow + day, signed: testNow,
                token: customer.appAccountToken, environment: "Sandbox"),
        ]
        _ = try await store.ingest(Fixture.batch(facts: facts), projector: projector, now: testNow)
        let stored = try #require(try await store.projection(appUserId: "m"))
        let document = try #require(CustomerDocument(encoded: stored.document))
        #expect(document.environments == grant)
        let state = document.state
        #expect(state.entitlements.map(\.id) == entitlements)
        #expect(state.entitlements.allSatisfy { $0.active })
        // The rows index every environment whatever the document merges.
        #expect(Set(stored.projection.entitlements.map(\.environment)) == ["Production", "Sandbox"])
        #expect(try await store.compareProjections(projector: projector).differences == 0)
        await store.close()
        await database.destroy()
    }
}
