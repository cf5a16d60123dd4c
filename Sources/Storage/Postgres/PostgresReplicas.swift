import Dispatch
import Foundation
import Synchronization

/// The WAL position of this process's last commit on the primary (`pg_current_wal_lsn()`, read
/// after each write group's `COMMIT`, and once at open). A replica that has replayed up to it
/// shows every write this process made, so a read sent there never loses this process's writes —
/// including a read after a write in the same request.
final class CommitPosition: Sendable {
    private let lsn = Mutex<UInt64>(0)

    var current: UInt64 { lsn.withLock { $0 } }

    func advance(to value: UInt64) {
        lsn.withLock { $0 = max($0, value) }
    }

    /// Reads the primary's current WAL position on `session` and advances to it.
    func advance(reading session: any SQLSession) throws {
        if let value = try Self.lsn(session, "SELECT pg_current_wal_lsn()::text") { advance(to: value) }
    }

    /// A `pg_lsn` query's answer as a number; nil when it is NULL (e.g. replay position on a primary).
    static func lsn(_ session: any SQLSession, _ sql: String) throws -> UInt64? {
        guard let text = try session.query(sql, []).first?.optionalText(0) else { return nil }
        return parse(text)
    }

    /// `"16/B374D848"` → 0x16_B374D848.
    static func parse(_ text: String) -> UInt64? {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16),
            high <= UInt64(UInt32.max), low <= UInt64(UInt32.max)
        else { return nil }
        return high << 32 | low
    }
}

/// Reads served by PostgreSQL streaming replicas (`StoreConfiguration.postgresReplicas`).
///
/// `connections` threads per replica, each owning one libpq connection, take reads from their own
/// queue. A worker runs a read on its replica only when the replica's replay position
/// (`pg_last_wal_replay_lsn()`, asked again only when the last answer is behind) is at or past
/// ``CommitPosition``; otherwise — or when the replica cannot be reached, which also keeps the
/// worker off it for a backoff of 0.1 s doubling to 30 s — the read goes to the primary's queue.
/// Reads are safe to run twice, so a read that failed half way on a replica is simply run again.
final class ReplicaReads: Sendable {
    let queue = JobQueue()
    let position = CommitPosition()
    private let threads = ThreadTracker()

    init(urls: [String], primary: JobQueue, configuration: StoreConfiguration) {
        let count = max(1, configuration.postgresConnections)
        for (replica, url) in urls.enumerated() {
            for index in 0..<count {
                let queue = self.queue
                let position = self.position
                let observer = configuration.ledgerObserver
                threads.start(name: "entitled.replica.\(replica).\(index)") {
                    var worker = Worker(url: url, configuration: configuration)
                    while let jobs = queue.take(maxWrites: 1, groupReads: false) {
                        let served = worker.serve(jobs, needed: position.current)
                        observer?.readsRouted(jobs.count, onReplica: served)
                        if served { continue }
                        for job in jobs where !primary.enqueue(job) {
                            job.finish(overriding: StorageError(.closed, "the store is closed"))
                        }
                    }
                }
            }
        }
    }

    func close() async {
        queue.close()
        await threads.waitForAll()
    }

    private struct Worker {
        let url: String
        let configuration: StoreConfiguration
        var connection: PostgresConnection? = nil
        /// The replica's last known replay position (it only grows while the replica runs).
        var replayed: UInt64 = 0
        var retryAt: UInt64 = 0
        var backoff: UInt64 = 100_000_000

        init(url: String, configuration: StoreConfiguration) {
            self.url = url
            self.configuration = configuration
        }

        /// Runs `jobs` on the replica and finishes them; false when they must go to the primary.
        mutating func serve(_ jobs: [any StorageJob], needed: UInt64) -> Bool {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now >= retryAt else { return false }
            do {
                let session: PostgresConnection
                if let existing = connection, existing.isHealthy {
                    session = existing
                } else if let existing = connection {
                    try existing.connect()
                    session = existing
                } else {
                    session = try PostgresConnection(
                        conninfo: url, schema: configuration.postgresSchema,
                        statementTimeoutMilliseconds: configuration.postgresStatementTimeoutMilliseconds,
                        connectTimeoutSeconds: configuration.postgresConnectTimeoutSeconds)
                    connection = session
                }
                if replayed < needed {
                    // NULL: not a standby (e.g. promoted), whose data may be older than the primary's.
                    replayed = try CommitPosition.lsn(session, "SELECT pg_last_wal_replay_lsn()::text") ?? 0
                    guard replayed >= needed else { return false }
                }
                for job in jobs where !job.perform(session) {
                    if let error = job.failure as? StorageError, error.retry != .none { throw error }
                }
                backoff = 100_000_000
            } catch {
                retryAt = now + backoff
                backoff = min(backoff * 2, 30_000_000_000)
                return false
            }
            for job in jobs { job.finish(overriding: nil) }
            return true
        }
    }
}
