// The ingest's counters (schema version 19): messages per hour and code, and the newest accepted
// message per app and environment, written in the ingest's own transaction so the console's health
// page reads a few dozen rows instead of a day of messages.

/// How the ingest counters are kept and read.
enum IngestCounters {
    /// `ingest_hourly.code` of accepted messages.
    static let accepted = ""
    /// The longest rejection code kept (as the notification's own `reject_code`).
    static let maxCodeLength = 64

    /// Adds `count` messages to an hour's count in `shard` (``RollupShards/value(_:)``; a read
    /// adds the shards up).
    static func addCount(hour: Int64, code: String, shard: SQLQuery, count: Int64) -> SQLQuery {
        """
        INSERT INTO ingest_hourly (hour, code, shard, count) VALUES (\(hour), \(code), \(shard), \(count))
        ON CONFLICT (hour, code, shard) DO UPDATE SET count = ingest_hourly.count + excluded.count
        """
    }

    /// Moves the newest message time of an (app, environment) shard forward to `receivedAt`.
    static func advanceLatest(bundleId: String, environment: String, shard: SQLQuery, receivedAt: Int64) -> SQLQuery {
        """
        INSERT INTO ingest_latest (bundle_id, environment, shard, received_at) VALUES (\(bundleId), \(environment), \(shard), \(receivedAt))
        ON CONFLICT (bundle_id, environment, shard) DO UPDATE SET received_at =
            CASE WHEN excluded.received_at > ingest_latest.received_at THEN excluded.received_at ELSE ingest_latest.received_at END
        """
    }

    /// Counts one message in the transaction's tail (written at its commit, ``TransactionTail``):
    /// its hour and code, and for an accepted one the newest message of each (app, environment)
    /// its facts belong to.
    static func count(in tail: TransactionTail, receivedAt: Int64, code: String, latest: Set<[String]> = []) {
        tail.countMessage(hour: receivedAt / 3_600_000, code: String(code.prefix(maxCodeLength)))
        for key in latest where key.count == 2 {
            tail.noteLatest(bundleId: key[0], environment: key[1], receivedAt: receivedAt)
        }
    }
}

extension Ledger {
    /// Counts an accepted message whose facts are `rows` (see ``IngestCounters``).
    func countAccepted(_ message: ReceivedMessage, rows: [FactRow]) {
        let latest = Set(rows.map { [message.bundleId ?? "", $0.fact.environment.rawValue] })
        IngestCounters.count(in: session.tail, receivedAt: message.receivedAt, code: IngestCounters.accepted, latest: latest)
    }

    /// Counts a rejected message under its code.
    func countRejected(_ message: ReceivedMessage, code: String) {
        IngestCounters.count(in: session.tail, receivedAt: message.receivedAt, code: code)
    }

    /// Deletes the hourly counts of hours that ended before `cutoff` (ms): they go with the
    /// rejected messages' retention.
    func purgeIngestCounts(before cutoff: Int64) throws {
        try session.query("DELETE FROM ingest_hourly WHERE hour < \(cutoff / 3_600_000)")
    }

    /// The console's health from the counters: hours from `since` (ms), rejections by code over
    /// them, the newest message per app and environment, and the reconciliation state at `now`.
    func ingestHealth(since: Int64, now: Int64) throws -> IngestHealth {
        var health = IngestHealth()
        let fromHour = since / 3_600_000
        struct Hour: Decodable { var hour: Int64, accepted: Int64, rejected: Int64 }
        for row in try session.rows(
            """
            SELECT hour, SUM(CASE WHEN code = '' THEN count ELSE 0 END) AS accepted, SUM(CASE WHEN code = '' THEN 0 ELSE count END) AS rejected
            FROM ingest_hourly WHERE hour >= \(fromHour) GROUP BY hour ORDER BY hour
            """, as: Hour.self)
        {
            health.hours.append((row.hour, row.accepted, row.rejected))
        }
        struct Rejections: Decodable { var code: String, total: Int64 }
        for row in try session.rows(
            """
            SELECT code, SUM(count) AS total FROM ingest_hourly WHERE hour >= \(fromHour) AND code <> '' GROUP BY code ORDER BY 2 DESC, 1
            """, as: Rejections.self)
        {
            health.rejections.append((row.code, row.total))
        }
        struct Latest: Decodable { var bundleId: String, environment: String, receivedAt: Int64 }
        for row in try session.rows(
            """
            SELECT bundle_id, environment, MAX(received_at) AS received_at FROM ingest_latest GROUP BY bundle_id, environment ORDER BY 1, 2
            """, as: Latest.self)
        {
            health.latest.append((row.bundleId, row.environment, row.receivedAt))
        }
        struct Reconciliation: Decodable { var bundleId: String, environment: String, watermark: Int64?, leaseExpiresAt: Int64? }
        for row in try session.rows(
            "SELECT bundle_id, environment, watermark, lease_expires_at FROM reconcile_state ORDER BY bundle_id, environment",
            as: Reconciliation.self)
        {
            let leased = row.leaseExpiresAt.map { $0 > now } ?? false
            health.reconciliation.append((row.bundleId, row.environment, row.watermark, leased))
        }
        return health
    }
}
