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

    /// Where a read goes (``ReplicaRoute``). The customer's write was stamped at 50 and the
    /// primary stood at 100 when the stamp was looked up; this process last committed at 10.
    @Test(arguments: [
        // No customer: this process's last commit decides, as before.
        (10, nil, 10, nil, .replica), (10, nil, 9, nil, .ask), (10, nil, 9, .some(nil), .primary),
        // Caught up with the primary's position at the lookup: has every commit the lookup saw.
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 100, nil, .replica),
        // Past the stamp but maybe not past the commit record after it: its copy of the row decides.
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 60, nil, .ask),
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 60, .some(50), .replica),
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 60, .some(70), .replica),
        // Waiting at the write's commit record (as a delayed standby does): the older copy.
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 60, .some(40), .primary),
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 60, .some(nil), .primary),
        // Behind the stamp itself.
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 40, nil, .ask),
        (10, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 40, .some(50), .primary),
        // This process committed after the lookup (at 120): that commit must be there too.
        (120, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 110, .some(50), .primary),
        (120, ReplicaNeed(appUserId: "u", stamp: 50, horizon: 100), 120, nil, .replica),
        // A row stamped before version 17: only the primary's whole position will do.
        (10, ReplicaNeed(appUserId: "u", stamp: nil, horizon: 100), 99, nil, .ask),
        (10, ReplicaNeed(appUserId: "u", stamp: nil, horizon: 100), 99, .some(99), .primary),
        (10, ReplicaNeed(appUserId: "u", stamp: nil, horizon: 100), 100, nil, .replica),
    ] as [(UInt64, ReplicaNeed?, UInt64, UInt64??, ReplicaRoute)])
    func routesACustomerRead(position: UInt64, need: ReplicaNeed?, replayed: UInt64, copy: UInt64??, expected: ReplicaRoute) {
        #expect(ReplicaRoute.decide(position: position, need: need, replayed: replayed, copy: copy) == expected)
    }

    /// Every write of a customer's state row is stamped with the primary's WAL position inside its
    /// transaction (migration 17's trigger), and the stamps of one customer only grow; the lookup
    /// a customer read makes first returns the stamp and a position at or past its commit.
    @Test(arguments: Backend.postgresOnly)
    func customerWritesAreStamped(backend: Backend) async throws {
        try await withStore(backend) { store, _ in
            let postgres = try #require(store as? PostgresStore)
            _ = try await store.ensureCustomer(appUserId: "u1", appAccountToken: nil, projector: testProjector, now: testNow)
            let stamp = { (user: String) in try await postgres._scalar("SELECT commit_lsn FROM customer_states WHERE app_user_id = \(user)") }
            let first = try await stamp("u1")
            #expect(first > 0)
            _ = try await store.reproject(appUserId: "u1", projector: testProjector, now: testNow + 1)
            let second = try await stamp("u1")
            #expect(second > first)
            let committed = try await postgres._scalar("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
            #expect(committed > second)
            let need = try await postgres.write { try ReplicaNeed.lookup($0, appUserId: "u1") }
            #expect(need?.stamp == UInt64(second))
            #expect((need?.horizon ?? 0) >= UInt64(committed))
            #expect(try await postgres.write { try ReplicaNeed.lookup($0, appUserId: "nobody") } == nil)
        }
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
