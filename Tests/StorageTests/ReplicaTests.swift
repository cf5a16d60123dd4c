import Foundation
import Synchronization
import Testing

@testable import Storage

/// Reads on streaming replicas (``ReplicaReads``): what can be checked without a standby. The
/// routing to a real standby that replays late is checked by `scripts/test-scale.sh`.
@Suite struct ReplicaTests {
    @Test(arguments: [
        ("0/0", UInt64(0)), ("0/1", 1), ("16/B374D848", 0x16_B374_D848), ("FFFFFFFF/FFFFFFFF", UInt64.max),
        ("", nil), ("16", nil), ("1/2/3", nil), ("G/0", nil), ("100000000/0", nil), ("0/100000000", nil),
    ] as [(String, UInt64?)])
    func parsesWALPositions(text: String, expected: UInt64?) {
        #expect(CommitPosition.parse(text) == expected)
    }

    @Test func theCommitPositionOnlyMovesForward() {
        let position = CommitPosition()
        position.advance(to: 10)
        position.advance(to: 7)
        #expect(position.current == 10)
        position.advance(to: 11)
        #expect(position.current == 11)
    }

    /// A replica that refuses connections, or a server that is no standby (its replay position
    /// is NULL): every read goes to the primary, and a write is read back at once.
    @Test(arguments: Backend.postgresOnly.flatMap { backend in ["unreachable", "not a standby"].map { (backend, $0) } })
    func readsFallBackToThePrimary(backend: Backend, replica: String) async throws {
        let url = replica == "unreachable" ? "postgres://postgres@127.0.0.1:1/postgres" : nil
        let routes = RouteCounter()
        try await withStore(
            backend,
            configure: { options, database in
                options.postgresReplicas = [url ?? database.url]
                options.ledgerObserver = routes
            }
        ) { store, _ in
            try await store.ping()
            for index in 0..<20 {
                _ = try await store.ensureCustomer(appUserId: "u\(index)", appAccountToken: nil, projector: testProjector, now: testNow)
                #expect(try await store.customer(appUserId: "u\(index)")?.appUserId == "u\(index)")
            }
        }
        // Each ensureCustomer reads first, then the test reads: 40 reads, none on the replica.
        #expect(routes.counts.withLock { $0 } == [false: 40])
    }
}

/// Counts where reads were routed (``LedgerObserver/readsRouted(_:onReplica:)``).
final class RouteCounter: LedgerObserver {
    let counts = Mutex<[Bool: Int]>([:])
    func groupCommitted(writes: Int) {}
    func projectionsChanged(_ change: ProjectionTally) {}
    func readsRouted(_ reads: Int, onReplica: Bool) { counts.withLock { $0[onReplica, default: 0] += reads } }
}
