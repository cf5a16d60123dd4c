import AppStoreTesting
import Entitlements
import Foundation
import Testing

@testable import Storage

/// ``LedgerStore/changeMarkNow()``: equal marks mean nothing was committed between them, by the
/// store itself or by any other connection to its database.
@Suite("The change mark moves with every commit")
struct ChangeMarkTests {
    @Test("reads keep the mark; this store's commits and another connection's move it", arguments: Backend.all)
    func marks(backend: Backend) async throws {
        try await withStore(backend) { store, database in
            func mark() throws -> Int64? { if case .done(let mark) = try store.changeMarkNow() { mark } else { nil } }
            guard backend == .sqliteFile else {
                // PostgreSQL (other servers write it) and SQLite in memory give none.
                #expect(try mark() == nil)
                return
            }
            let first = try #require(try mark())
            _ = try await store.projection(appUserId: "nobody")
            if case .done = try store.stateNow(appUserId: "nobody") {}
            #expect(try mark() == first)

            _ = try await store.ensureCustomer(appUserId: "ana", appAccountToken: nil, projector: testProjector, now: testNow)
            let second = try #require(try mark())
            #expect(second != first)
            #expect(try mark() == second)

            // Another connection to the same file, as another process (`entitled import`) is.
            let other = try await database.open()
            let third: Int64
            do {
                let before = try #require(try mark())
                _ = try await other.ensureCustomer(appUserId: "bo", appAccountToken: nil, projector: testProjector, now: testNow)
                third = try #require(try mark())
                #expect(third != before)
                try await other.raw("UPDATE customer_states SET projection_error = 'x' WHERE app_user_id = 'bo'")
                #expect(try mark() != third)
            } catch {
                await other.close()
                throw error
            }
            await other.close()
            try await store.raw("UPDATE customer_states SET projection_error = NULL WHERE app_user_id = 'bo'")
        }
    }

    /// The mark read from the WAL index's header against `PRAGMA data_version` on a connection of
    /// its own, over generated steps: every commit the version sees moves the mark, and reads and
    /// checkpoints that copy pages without a commit leave it.
    @Test("the WAL index's mark moves with every commit data_version sees", arguments: [1, 2, 3])
    func walIndexAgainstDataVersion(seed: UInt64) async throws {
        try await withStore(.sqliteFile) { store, database in
            let path = String(database.url.dropFirst("sqlite:".count))
            func mark() throws -> Int64 {
                guard case .done(let mark) = try store.changeMarkNow() else { throw StorageError(.internal, "no mark") }
                return mark
            }
            let first = try mark()
            // The store's mark is the header's, not a version of its watcher's.
            #expect(SQLiteWALIndex(path: path + "-shm")?.mark() == first)
            let probe = try SQLiteConnection(path: path)
            try probe.configure(writer: false, wal: true, busyTimeoutMilliseconds: 5000)
            let other = try await database.open()
            var generator = SplitMix64(seed: seed)
            var (lastMark, lastVersion) = (first, try probe.dataVersion())
            var moves = 0
            do {
                for step in 0..<120 {
                    let action = Int.random(in: 0..<6, using: &generator)
                    switch action {
                    case 0: _ = try await store.ensureCustomer(appUserId: "s\(step)", appAccountToken: nil, projector: testProjector, now: testNow)
                    case 1: _ = try await other.ensureCustomer(appUserId: "o\(step)", appAccountToken: nil, projector: testProjector, now: testNow)
                    case 2: try await other.raw("UPDATE customer_states SET computed_at = computed_at + 1")
                    case 3: _ = try probe.query("PRAGMA wal_checkpoint(\(Bool.random(using: &generator) ? "PASSIVE" : "RESTART"))", [])
                    default: _ = try await store.projection(appUserId: "s\(Int.random(in: 0...step, using: &generator))")
                    }
                    let (now, version) = (try mark(), try probe.dataVersion())
                    if version != lastVersion {
                        #expect(now != lastMark, "step \(step): a commit (action \(action)) left the mark")
                        moves += 1
                    } else {
                        #expect(now == lastMark, "step \(step): the mark moved without a commit (action \(action))")
                    }
                    #expect(try mark() == now)
                    (lastMark, lastVersion) = (now, version)
                }
            } catch {
                await other.close()
                throw error
            }
            await other.close()
            #expect(moves > 20)
        }
    }

    @Test("a closed store gives no mark")
    func closed() async throws {
        let database = try TestDatabase(.sqliteFile)
        let store = try await database.open()
        #expect(try { if case .done = try store.changeMarkNow() { true } else { false } }())
        await store.close()
        #expect(try { if case .wouldWait = try store.changeMarkNow() { true } else { false } }())
        await database.destroy()
    }
}
