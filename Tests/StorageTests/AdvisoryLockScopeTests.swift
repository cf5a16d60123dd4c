import Foundation
import Synchronization
import Testing

@testable import Storage

/// The ownership locks (``Ledger/lockKeys(_:)``) are the schema's: a transaction holding a
/// subscription's key keeps a second transaction of the same schema waiting, and none of another
/// schema on the same cluster (another deployment, another test using the same fixture ids).
@Suite struct AdvisoryLockScopeTests {
    /// How long the first transaction holds its key, in seconds.
    static let holdSeconds = 2

    /// Locks `key` in a write of `store`, waits for `release` (at most 4 s), then
    /// commits; `locked` is signalled once the lock is taken.
    static func holdKey(_ key: String, in store: any LedgerStore, locked: DispatchSemaphore, release: DispatchSemaphore) async throws {
        let sessions = try #require(store as? any SessionBackedStore)
        try await sessions.write { session in
            try Ledger(session: session, fault: nil).lockKeys([key])
            locked.signal()
            _ = release.wait(timeout: .now() + .seconds(4))
        }
    }

    /// How long locking `key` in a write of `store` takes.
    static func timeToLock(_ key: String, in store: any LedgerStore) async throws -> Duration {
        let sessions = try #require(store as? any SessionBackedStore)
        let clock = ContinuousClock()
        let started = clock.now
        try await sessions.write { session in try Ledger(session: session, fault: nil).lockKeys([key]) }
        return clock.now - started
    }

    @Test(arguments: Backend.postgresOnly)
    func aKeyWaitsInItsSchemaAndNotInAnother(_ backend: Backend) async throws {
        let first = try TestDatabase(backend)
        let second = try TestDatabase(backend)
        let holder = try await first.open()
        let sameSchema = try await first.open()
        let otherSchema = try await second.open()
        let (locked, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let holding = Task { try await Self.holdKey("o-shared", in: holder, locked: locked, release: release) }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                locked.wait()
                continuation.resume()
            }
        }
        // Another schema: at once, while the first transaction still holds the key.
        let across = try await Self.timeToLock("o-shared", in: otherSchema)
        // The same schema: only once the holder lets go.
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Self.holdSeconds)) { release.signal() }
        let within = try await Self.timeToLock("o-shared", in: sameSchema)
        try await holding.value
        #expect(across < .seconds(1), "another schema's transaction waited \(across)")
        #expect(within > .seconds(Self.holdSeconds) - .milliseconds(500), "the same schema's transaction did not wait: \(within)")
        for store in [holder, sameSchema, otherSchema] { await store.close() }
        await first.destroy()
        await second.destroy()
    }
}
