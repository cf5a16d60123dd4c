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
    static func lsn(_ session: any SQLSession, _ query: SQLQuery) throws -> UInt64? {
        guard let text = try session.value(query, as: String?.self) ?? nil else { return nil }
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

/// What a read of one customer needs from a replica to see every write committed for that
/// customer before the read began, on any server (``ReadYourWrites/allServers``): looked up on the
/// primary just before the read (one indexed statement, ``lookup(_:appUserId:)``).
struct ReplicaNeed: Sendable, Equatable {
    /// The customer whose read this is.
    var appUserId: String
    /// The stamp (`customer_states.commit_lsn`) of the customer's last write on the primary: the
    /// primary's WAL insert position inside that write's transaction, so *before* its commit
    /// record. nil for a row written before the stamp existed (schema version 17).
    var stamp: UInt64?
    /// The primary's WAL insert position when the stamp was read: the commit of every row the
    /// lookup saw lies before it.
    var horizon: UInt64

    /// The customer's stamp and the primary's position, in one statement; nil when the primary
    /// has no state row for the customer (none yet, erased, or merged into another): such a read
    /// goes to the primary, whose answer is the current one, not to a replica that may still hold
    /// the erased row.
    static func lookup(_ session: any SQLSession, appUserId: String) throws -> ReplicaNeed? {
        guard
            let row = try session.row(
                """
                SELECT (s.app_user_id IS NOT NULL)::int AS stored, s.commit_lsn AS stamp,
                       (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS horizon
                FROM (SELECT 1) AS one LEFT JOIN customer_states s ON s.app_user_id = \(appUserId)
                """, as: Lookup.self), row.stored
        else { return nil }
        return ReplicaNeed(appUserId: appUserId, stamp: row.stamp.map { UInt64(max(0, $0)) }, horizon: UInt64(max(0, row.horizon)))
    }

    /// The replica's replay position and its copy of the customer's stamp, in one statement.
    static func replicaPosition(appUserId: String) -> SQLQuery {
        "SELECT pg_last_wal_replay_lsn()::text AS replayed, (SELECT commit_lsn FROM customer_states WHERE app_user_id = \(appUserId)) AS stamp"
    }

    /// ``lookup(_:appUserId:)``'s row: whether the primary has the customer's state row, its stamp, the horizon.
    private struct Lookup: Decodable {
        var stored: Bool
        var stamp: Int64?
        var horizon: Int64
    }

    /// ``replicaPosition(appUserId:)``'s row: the replica's replay position (nil: not a standby)
    /// and its copy of the customer's stamp.
    struct ReplicaPosition: Decodable {
        var replayed: String?
        var stamp: Int64?
    }
}

/// Where a read goes, given what the replica is known to have.
///
/// A replica that has replayed past ``ReplicaNeed/horizon`` holds every commit the primary's
/// lookup saw, so the customer's last write. Short of that, the stamp alone does not tell: it
/// is taken inside the write's transaction, before the commit record, so a replica can have
/// replayed past the stamp and still wait at the commit (a standby with
/// `recovery_min_apply_delay` waits exactly there). Then the replica's own copy of the row
/// decides: stamps of one customer only grow (its writers hold its row lock, and each stamps
/// after the previous one committed), so a copy stamped at or past the primary's is the last
/// write or a later one.
enum ReplicaRoute: Equatable {
    /// Read on the replica.
    case replica
    /// Ask the replica for its position (and copy of the customer's stamp), then decide again.
    case ask
    /// Read on the primary.
    case primary

    /// - Parameters:
    ///   - position: This process's last commit (``CommitPosition``).
    ///   - need: The customer's need (nil: a read of no one customer, or ``ReadYourWrites/thisServer``).
    ///   - replayed: The replica's last known replay position.
    ///   - copy: The replica's copy of the customer's stamp, when asked (`.some(nil)`: it has no row
    ///     or no stamp); nil when not asked yet.
    static func decide(position: UInt64, need: ReplicaNeed?, replayed: UInt64, copy: UInt64?? = nil) -> ReplicaRoute {
        let everything = max(position, need?.horizon ?? 0)
        if replayed >= everything { return .replica }
        guard let need, let stamp = need.stamp, replayed >= max(position, stamp) else {
            return copy == nil ? .ask : .primary
        }
        guard let copy else { return .ask }
        if let copy, copy >= stamp { return .replica }
        return .primary
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
                        let served = worker.serve(jobs, position: position.current)
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
        mutating func serve(_ jobs: [any StorageJob], position: UInt64) -> Bool {
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
                // Reads are taken one at a time (`groupReads: false`).
                let need = jobs.first?.replicaNeed
                var route = ReplicaRoute.decide(position: position, need: need, replayed: replayed)
                if route == .ask {
                    // NULL: not a standby (e.g. promoted), whose data may be older than the primary's.
                    let copy: UInt64??
                    if let need {
                        let row = try session.row(ReplicaNeed.replicaPosition(appUserId: need.appUserId), as: ReplicaNeed.ReplicaPosition.self)
                        replayed = row?.replayed.flatMap(CommitPosition.parse) ?? 0
                        copy = .some(row?.stamp.map { UInt64(max(0, $0)) })
                    } else {
                        replayed = try CommitPosition.lsn(session, "SELECT pg_last_wal_replay_lsn()::text") ?? 0
                        copy = .some(nil)
                    }
                    route = ReplicaRoute.decide(position: position, need: need, replayed: replayed, copy: copy)
                }
                guard route == .replica else { return false }
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
