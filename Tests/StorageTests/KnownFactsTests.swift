import Entitlements
import Synchronization
import Testing

@testable import Storage

/// The facts an ingest hands in are projected as they are: the ledger does not decode again the
/// text it has just written (on the single SQLite writer that was the largest cost of a projection).
@Suite("An ingest's own facts are not decoded again")
struct KnownFactsTests {
    /// The test projector, counting the texts it decodes.
    final class CountingProjector: Sendable {
        let decodes = Atomic<Int>(0)

        var projector: Projector {
            decodingTestProjector { [self] text, decode in
                decodes.add(1, ordering: .relaxed)
                return decode(text)
            }
        }
    }

    @Test("only facts stored before the ingest are decoded for its projection", arguments: Backend.all)
    func ownFactsAreNotDecoded(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let projector = CountingProjector()
            let token = "00000000-0000-4000-8000-00000000001a"
            _ = try await store.ensureCustomer(appUserId: "kim", appAccountToken: token, projector: projector.projector, now: testNow)
            let first = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "k1", tid: "k1", expires: testNow + day, signed: testNow - 1, token: token)]),
                projector: projector.projector, now: testNow)
            #expect(first.affectedCustomers == ["kim"])
            #expect(projector.decodes.load(ordering: .relaxed) == 0)
            // The next ingest projects Kim from both facts: the stored one is decoded, its own is not.
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.renewal(otid: "k1", autoRenew: false, signed: testNow)]), projector: projector.projector, now: testNow)
            #expect(projector.decodes.load(ordering: .relaxed) == 1)
            #expect(try await store.projection(appUserId: "kim")?.projection.entitlements.first?.willRenew == false)
        }
    }
}
