import Entitlements
import Foundation
import Synchronization
import Testing

@testable import Storage

/// The test projector, whose facts about the subscriptions named in `poisoned` do not decode (as
/// for a customer with a fact this binary cannot read).
final class PoisonableProjector: Sendable {
    let poisoned = Mutex<Set<String>>([])

    var projector: Projector {
        decodingTestProjector { [self] text, decode in
            poisoned.withLock { names in names.contains { text.contains("\"o-\($0)\"") } } ? nil : decode(text)
        }
    }
}

@Suite("Projection failures stay with their customer")
struct ProjectionFailureTests {
    static let tokens = ["alice": "00000000-0000-4000-8000-00000000000a", "bob": "00000000-0000-4000-8000-00000000000b"]

    /// Alice and Bob, each with an active subscription; Alice's projection then fails.
    func seed(_ store: any LedgerStore, projector: PoisonableProjector) async throws {
        for (name, token) in Self.tokens.sorted(by: { $0.key < $1.key }) {
            _ = try await store.ensureCustomer(appUserId: name, appAccountToken: token, projector: projector.projector, now: testNow)
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.transaction(otid: "o-\(name)", tid: "t-\(name)-1", expires: testNow + day, signed: testNow - 10, token: token)]),
                projector: projector.projector, now: testNow)
        }
    }

    @Test("ingest commits the facts and marks only the failing customer; a later success clears the mark", arguments: Backend.all)
    func ingestIsolates(backend: Backend) async throws {
        let projector = PoisonableProjector()
        try await withStore(backend) { store, _ in
            try await seed(store, projector: projector)
            projector.poisoned.withLock { $0 = ["alice"] }
            // One notification touching both customers: it commits, Bob is projected, Alice is marked.
            let result = try await store.ingest(
                Fixture.batch(facts: [
                    Fixture.transaction(otid: "o-alice", tid: "t-alice-2", expires: testNow + 30 * day, signed: testNow, token: Self.tokens["alice"]),
                    Fixture.transaction(otid: "o-bob", tid: "t-bob-2", expires: testNow + 30 * day, signed: testNow, token: Self.tokens["bob"]),
                ]),
                projector: projector.projector, now: testNow)
            #expect(result.status == .accepted)
            #expect(result.insertedFacts == 2)
            #expect(result.failedCustomers.map(\.appUserId) == ["alice"])
            let reason = try #require(result.failedCustomers.first?.reason)
            #expect(reason.hasSuffix("(transaction) does not decode as an engine fact"))
            #expect(try await store.facts(appUserId: "alice").count == 2)

            let alice = try #require(try await store.projection(appUserId: "alice"))
            #expect(alice.failure == reason)
            #expect(alice.projection.state.isEmpty)
            let bob = try #require(try await store.projection(appUserId: "bob"))
            #expect(bob.failure == nil)
            #expect(bob.projection.subscriptions.first?.expiresAt == testNow + 30 * day)
            if case .done(let state) = try store.stateNow(appUserId: "alice") {
                #expect(state?.failure == reason)
            }

            // Fixed: the next projection of Alice clears the mark.
            projector.poisoned.withLock { $0 = [] }
            _ = try await store.ingest(
                Fixture.batch(facts: [Fixture.renewal(otid: "o-alice", autoRenew: true, signed: testNow + 1)]),
                projector: projector.projector, now: testNow)
            let healed = try #require(try await store.projection(appUserId: "alice"))
            #expect(healed.failure == nil)
            #expect(healed.projection.subscriptions.first?.expiresAt == testNow + 30 * day)
        }
    }

    @Test("rebuild reports a customer it cannot project, marks it, and rebuilds the others", arguments: Backend.all)
    func rebuildIsolates(backend: Backend) async throws {
        let projector = PoisonableProjector()
        try await withStore(backend) { store, _ in
            try await seed(store, projector: projector)
            // Bob's projection drifted: the rebuild must still repair it though Alice fails.
            try await store.raw("UPDATE subscription_projections SET status = 'drifted' WHERE original_transaction_id = 'o-bob'")
            projector.poisoned.withLock { $0 = ["alice"] }
            let report = try await store.rebuild(projector: projector.projector, now: testNow)
            #expect(report.customers == 2)
            #expect(report.changedCustomers == ["bob"])
            #expect(report.failedCustomers.map(\.appUserId) == ["alice"])
            let reason = try #require(report.failedCustomers.first?.reason)
            #expect(reason.hasSuffix("(transaction) does not decode as an engine fact"))
            #expect(try await store.projection(appUserId: "alice")?.failure == reason)
            #expect(try await store.projection(appUserId: "bob")?.failure == nil)

            // Once the projector succeeds, rebuild clears the mark (a difference it repairs).
            projector.poisoned.withLock { $0 = [] }
            let healed = try await store.rebuild(projector: projector.projector, now: testNow)
            #expect(healed.failedCustomers.isEmpty)
            #expect(healed.changedCustomers == ["alice"])
            #expect(try await store.projection(appUserId: "alice")?.failure == nil)
        }
    }

    @Test("a failure reason is cut to a bounded size")
    func boundedReason() {
        let failure = ProjectionFailure(appUserId: "x", reason: String(repeating: "é", count: 5000))
        #expect(failure.reason.utf8.count <= ProjectionFailure.maxReasonBytes)
        #expect(failure.reason.utf8.count >= ProjectionFailure.maxReasonBytes - 1)
    }
}
