import Foundation
import Synchronization
import Testing

@testable import Storage

/// Another process holding SQLite's write lock: the writer waits for it past the busy timeout
/// (its callers are still waiting), and fails them only once the lock wait is over.
@Suite("SQLite write lock held by another process")
struct WriteLockWaitTests {
    /// Runs `body` with a fresh SQLite file store (a 50 ms busy timeout, a `lockWait` ms lock
    /// wait) whose write lock a second connection, as another process has it, holds until `body`
    /// commits on it.
    static func withLockHeld(
        lockWait: Int, _ body: (any LedgerStore, SQLiteConnection) async throws -> Void
    ) async throws {
        try await withStore(.sqliteFile, configure: { options, _ in
            options.sqliteBusyTimeoutMilliseconds = 50
            options.sqliteWriteLockWaitMilliseconds = lockWait
        }) { store, database in
            let other = try SQLiteConnection(path: String(database.url.dropFirst("sqlite:".count)))
            try other.execute("BEGIN IMMEDIATE")
            try await body(store, other)
        }
    }

    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    static func ingest(_ store: any LedgerStore, _ index: Int) async throws -> IngestResult {
        try await store.ingest(
            Fixture.batch(facts: [Fixture.transaction(otid: "w\(index)", tid: "w\(index)", expires: testNow + day, signed: testNow)]),
            projector: testProjector, now: testNow)
    }

    @Test("an ingest waits out a write lock held longer than the busy timeout")
    func waitsPastTheBusyTimeout() async throws {
        try await Self.withLockHeld(lockWait: 30_000) { store, other in
            let done = Flag()
            let ingest = Task {
                defer { done.value.store(true, ordering: .sequentiallyConsistent) }
                return try await Self.ingest(store, 1)
            }
            // Ten busy timeouts: the writer has asked for the lock again and again.
            try await Task.sleep(for: .milliseconds(500))
            let endedEarly = done.value.load(ordering: .sequentiallyConsistent)
            #expect(!endedEarly, "the ingest ended while the lock was held")
            try other.execute("COMMIT")
            let result = try await ingest.value
            #expect(result.status == .accepted)
            #expect(try await store.rows("notifications") == 1)
        }
    }

    @Test("a write lock held past the lock wait fails the ingest, naming the statement; the next one commits")
    func failsAfterTheLockWait() async throws {
        try await Self.withLockHeld(lockWait: 300) { store, other in
            let started = ContinuousClock.now
            await #expect {
                _ = try await Self.ingest(store, 1)
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.code == .unavailable && (error.detail ?? "").contains("BEGIN IMMEDIATE")
            }
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(300), "failed after \(waited), before the lock wait was over")
            try other.execute("COMMIT")
            #expect(try await Self.ingest(store, 2).status == .accepted)
            #expect(try await store.rows("notifications") == 1)
        }
    }
}
