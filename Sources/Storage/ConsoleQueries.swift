import Entitlements

// What the console reads: the metric rollups, customer search and the ingest's health. Every
// query is an index lookup or a range bounded by days or by a time window, never a ledger scan.

/// The rollup rows an overview is made of (``ConsoleStore/metricRollup(environment:fromDay:toDay:)``).
public struct MetricRollup: Sendable, Hashable {
    /// Each stock's level at the start of the first day, per currency for money.
    public var opening: [MetricDelta] = []
    /// Every nonzero daily row of the range, by day: a stock's change or a flow's amount.
    public var days: [MetricDelta] = []

    public init(opening: [MetricDelta] = [], days: [MetricDelta] = []) {
        self.opening = opening
        self.days = days
    }
}

/// A customer a console search found, with the ids it matched through.
public struct CustomerMatch: Sendable, Hashable {
    public var appUserId: String
    public var appAccountToken: String
    public var createdAt: Int64
}

/// What the ingest did in a window: accepted and rejected messages per hour, rejections by code,
/// the last fact per app and environment.
public struct IngestHealth: Sendable, Hashable {
    /// (hour since the epoch, accepted, rejected), oldest first.
    public var hours: [(hour: Int64, accepted: Int64, rejected: Int64)] = []
    /// Rejections by code in the window, most first.
    public var rejections: [(code: String, count: Int64)] = []
    /// The latest received fact per app and environment in the window.
    public var latest: [(bundleId: String, environment: String, receivedAt: Int64)] = []
    /// Reconciliation with Apple per app and environment: how far its notification history is
    /// ingested (ms; nil: not yet) and whether a process holds the lease now.
    public var reconciliation: [(bundleId: String, environment: String, watermark: Int64?, leased: Bool)] = []
    /// Messages looked at (at most ``scanLimit``).
    public var scanned: Int

    /// The most messages ``ConsoleStore/ingestHealth(since:now:)`` looks at.
    public static let scanLimit = 200_000

    public static func == (a: Self, b: Self) -> Bool {
        a.hours.map { [$0.hour, $0.accepted, $0.rejected] } == b.hours.map { [$0.hour, $0.accepted, $0.rejected] }
            && a.rejections.map { "\($0.code)=\($0.count)" } == b.rejections.map { "\($0.code)=\($0.count)" }
            && a.latest.map { "\($0.bundleId) \($0.environment) \($0.receivedAt)" }
                == b.latest.map { "\($0.bundleId) \($0.environment) \($0.receivedAt)" }
            && a.scanned == b.scanned
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(scanned) }
}

/// The console's reads, and the rollups' backfill.
public protocol ConsoleStore: Sendable {
    /// The rollup rows of one environment from `fromDay` to `toDay` (days since the epoch, UTC).
    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) async throws -> MetricRollup
    /// Computes the rollup contribution of up to `limit` customers stored before the rollups
    /// existed; returns how many (0: done). Resumable: each chunk commits on its own.
    func backfillMetrics(projector: any Projector, limit: Int) async throws -> Int
    /// Customers whose appUserId, appAccountToken, or a subscription's originalTransactionId or
    /// transactionId is `query` (exact), or whose appUserId starts with it; by appUserId, after
    /// `after`, at most `limit`.
    func searchCustomers(_ query: String, after: String?, limit: Int) async throws -> [CustomerMatch]
    /// The ingest's record since `since` (ms) and the reconciliation leases held at `now`, looking at the newest ``IngestHealth/scanLimit`` messages at most.
    func ingestHealth(since: Int64, now: Int64) async throws -> IngestHealth
}

extension SQLiteStore: ConsoleStore {}
extension PostgresStore: ConsoleStore {}

extension SessionBackedStore {
    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) async throws -> MetricRollup {
        try await read { try Ledger(session: $0, fault: nil).metricRollup(environment: environment, fromDay: fromDay, toDay: toDay) }
    }

    func backfillMetrics(projector: any Projector, limit: Int) async throws -> Int {
        try await write { try Ledger(session: $0, fault: nil).backfillMetricsChunk(limit: limit, projector: projector) }
    }

    func searchCustomers(_ query: String, after: String?, limit: Int) async throws -> [CustomerMatch] {
        try await read { session in
            func match(_ row: SQLRow) throws -> CustomerMatch {
                CustomerMatch(appUserId: try row.text(0), appAccountToken: try row.text(1), createdAt: try row.int(2))
            }
            // Exact ids: each an index lookup (customers, links, facts by transaction id).
            let exact = query.isEmpty ? [] : try session.query(
                """
                SELECT app_user_id, app_account_token, created_at FROM customers WHERE id IN (
                    SELECT id FROM customers WHERE app_user_id = $1 OR app_account_token = $2
                    UNION SELECT customer_id FROM links WHERE original_transaction_id = $1
                    UNION SELECT l.customer_id FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
                        WHERE f.transaction_id = $1)
                """, .text(query), .text(query.lowercased())).map(match)
            // appUserIds starting with the query: one ordered range of the unique index, one page.
            let prefix = try session.query(
                """
                SELECT app_user_id, app_account_token, created_at FROM customers
                WHERE app_user_id >= $1 AND app_user_id > $2 AND app_user_id < $3 ORDER BY app_user_id LIMIT $4
                """, .text(query), .text(after ?? ""), .text(query + "\u{10FFFF}"), .int(Int64(limit))).map(match)
            var seen = Set<String>()
            return (exact.filter { match in after.map { match.appUserId > $0 } ?? true } + prefix)
                .filter { seen.insert($0.appUserId).inserted }
                .sorted { $0.appUserId < $1.appUserId }.prefix(limit).map { $0 }
        }
    }

    func ingestHealth(since: Int64, now: Int64) async throws -> IngestHealth {
        let limit = Int64(IngestHealth.scanLimit)
        return try await read { session in
            let recent = """
                (SELECT id, received_at, outcome, reject_code FROM notifications WHERE received_at >= $1
                 ORDER BY received_at DESC LIMIT $2) AS n
                """
            var health = IngestHealth(scanned: 0)
            for row in try session.query(
                """
                SELECT n.received_at / 3600000, SUM(CASE WHEN n.outcome = 'accepted' THEN 1 ELSE 0 END),
                       SUM(CASE WHEN n.outcome = 'accepted' THEN 0 ELSE 1 END) FROM \(recent)
                GROUP BY n.received_at / 3600000 ORDER BY 1
                """, .int(since), .int(limit))
            {
                health.hours.append((try row.int(0), try row.int(1), try row.int(2)))
                health.scanned += Int(try row.int(1) + row.int(2))
            }
            for row in try session.query(
                """
                SELECT COALESCE(n.reject_code, 'UNKNOWN'), COUNT(*) FROM \(recent) WHERE n.outcome <> 'accepted'
                GROUP BY COALESCE(n.reject_code, 'UNKNOWN') ORDER BY 2 DESC, 1
                """, .int(since), .int(limit))
            {
                health.rejections.append((try row.text(0), try row.int(1)))
            }
            for row in try session.query(
                """
                SELECT COALESCE(f.bundle_id, ''), f.environment, MAX(n.received_at) FROM \(recent)
                JOIN facts f ON f.notification_id = n.id
                GROUP BY COALESCE(f.bundle_id, ''), f.environment ORDER BY 1, 2
                """, .int(since), .int(limit))
            {
                health.latest.append((try row.text(0), try row.text(1), try row.int(2)))
            }
            for row in try session.query(
                """
                SELECT bundle_id, environment, watermark, lease_expires_at FROM reconcile_state ORDER BY bundle_id, environment
                """)
            {
                let leased = (try row.optionalInt(3)).map { $0 > now } ?? false
                health.reconciliation.append((try row.text(0), try row.text(1), try row.optionalInt(2), leased))
            }
            return health
        }
    }
}
