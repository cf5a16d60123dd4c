import Entitlements

// What the console reads: the metric rollups, customer search and the ingest's health. Every
// query is an index lookup or a range bounded by days or by a time window, never a ledger scan.

/// The rollup rows an overview is made of (``ConsoleStore/metricRollup(environment:fromDay:toDay:)``).
public struct MetricRollup: Sendable, Hashable {
    /// Each stock's level at the start of the first day, per currency for money.
    public var opening: [MetricDelta] = []
    /// Every nonzero daily row of the range, by day: a stock's change or a flow's amount.
    public var days: [MetricDelta] = []
    /// Subscriptions of the environment granting access now (active or in grace) that no customer
    /// has claimed yet (``UnlinkedSubscription``); the stocks and flows include them.
    public var unlinkedActive: Int64 = 0

    public init(opening: [MetricDelta] = [], days: [MetricDelta] = [], unlinkedActive: Int64 = 0) {
        self.opening = opening
        self.days = days
        self.unlinkedActive = unlinkedActive
    }
}

/// A customer a console search found, with the ids it matched through.
public struct CustomerMatch: Sendable, Hashable {
    public var appUserId: String
    public var appAccountToken: String
    public var createdAt: Int64
}

/// What the ingest did in a window, from the counters the ingest keeps (schema version 19):
/// accepted and rejected messages per hour, rejections by code, the newest accepted message per
/// app and environment.
public struct IngestHealth: Sendable, Hashable {
    /// (hour since the epoch, accepted, rejected), oldest first.
    public var hours: [(hour: Int64, accepted: Int64, rejected: Int64)] = []
    /// Rejections by code in the window, most first.
    public var rejections: [(code: String, count: Int64)] = []
    /// The newest accepted message carrying a fact of each app and environment (at any time:
    /// an app that went quiet shows when it last spoke).
    public var latest: [(bundleId: String, environment: String, receivedAt: Int64)] = []
    /// Reconciliation with Apple per app and environment: how far its notification history is
    /// ingested (ms; nil: not yet) and whether a process holds the lease now.
    public var reconciliation: [(bundleId: String, environment: String, watermark: Int64?, leased: Bool)] = []

    public init() {}

    public static func == (a: Self, b: Self) -> Bool {
        a.hours.map { [$0.hour, $0.accepted, $0.rejected] } == b.hours.map { [$0.hour, $0.accepted, $0.rejected] }
            && a.rejections.map { "\($0.code)=\($0.count)" } == b.rejections.map { "\($0.code)=\($0.count)" }
            && a.latest.map { "\($0.bundleId) \($0.environment) \($0.receivedAt)" }
                == b.latest.map { "\($0.bundleId) \($0.environment) \($0.receivedAt)" }
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hours.count) }
}

/// The console's reads, and the rollups' backfill.
public protocol ConsoleStore: Sendable {
    /// The rollup rows of one environment from `fromDay` to `toDay` (days since the epoch, UTC).
    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) async throws -> MetricRollup
    /// The chart rows (``ChartRows``) of `kinds` in `environments` from `fromDay` to `toDay`
    /// (days since the epoch, UTC), summed over every segment but `segments` (those read as
    /// empty), of the segments `filter` holds only: one range of the rollups per series, never
    /// the ledger.
    func chartRows(
        environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>, filter: ChartFilter
    ) async throws -> ChartRows
    /// Computes the rollup contribution of up to `limit` customers stored before the rollups
    /// existed; returns how many (0: done). Resumable: each chunk commits on its own.
    func backfillMetrics(projector: Projector, limit: Int) async throws -> Int
    /// Customers whose appUserId, appAccountToken, an attribute's value, or a subscription's
    /// originalTransactionId or transactionId is `query` (exact), or whose appUserId starts with it; by appUserId, after
    /// `after`, at most `limit`. An unlinked subscription (``UnlinkedSubscription``) is found by
    /// its ids only, never by a prefix.
    func searchCustomers(_ query: String, after: String?, limit: Int) async throws -> [CustomerMatch]
    /// Customers owning one of `ids` exactly (each an appUserId, appAccountToken,
    /// originalTransactionId or transactionId), by appUserId; at most 100 ids are looked at.
    func exactCustomers(_ ids: [String]) async throws -> [CustomerMatch]
    /// Which of `transactionIds` (at most 100 looked at) the ledger holds a fact of.
    func knownTransactions(_ transactionIds: [String]) async throws -> Set<String>
    /// The ingest's counts per hour from `since` (ms), the newest message per app and environment,
    /// and the reconciliation leases held at `now`: a read of the counters, never of the messages.
    func ingestHealth(since: Int64, now: Int64) async throws -> IngestHealth
    /// Records a support action (``SupportAction``) once per customer of `appUserIds` (that
    /// exists), or once with no customer.
    func recordSupportAction(_ action: SupportAction, appUserIds: [String]) async throws
    /// The customer's support actions, newest first, at most `limit` (1…1000).
    func supportActions(appUserId: String, limit: Int) async throws -> [SupportAction]
}


extension ConsoleStore {
    /// ``chartRows(environments:kinds:fromDay:toDay:segments:filter:)`` of every segment.
    public func chartRows(environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>)
        async throws -> ChartRows
    {
        try await chartRows(environments: environments, kinds: kinds, fromDay: fromDay, toDay: toDay, segments: segments, filter: ChartFilter())
    }
}

extension SessionBackedStore {
    // The rollups as stored plus the journal's changes not folded yet (``RollupWrites``), read in
    // one snapshot.
    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) async throws -> MetricRollup {
        let journal = hasRollupJournal
        return try await read { session in
            try Ledger.inSnapshot(session) { ledger in
                let rollup = try ledger.metricRollup(environment: environment, fromDay: fromDay, toDay: toDay)
                guard journal else { return rollup }
                return try ledger.journaledChanges().adding(to: rollup, environment: environment, fromDay: fromDay, toDay: toDay)
            }
        }
    }

    func chartRows(
        environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>, filter: ChartFilter
    ) async throws -> ChartRows {
        let journal = hasRollupJournal
        return try await read { session in
            try Ledger.inSnapshot(session) { ledger in
                let rows = try ledger.chartRows(
                    environments: environments, kinds: kinds, fromDay: fromDay, toDay: toDay, segments: segments, filter: filter)
                guard journal else { return rows }
                return try ledger.journaledChanges().adding(
                    to: rows, environments: environments, kinds: kinds, fromDay: fromDay, toDay: toDay, segments: segments, filter: filter)
            }
        }
    }

    func backfillMetrics(projector: Projector, limit: Int) async throws -> Int {
        try await write { try Ledger(session: $0, fault: nil).backfillMetricsChunk(limit: limit, projector: projector) }
    }

    func searchCustomers(_ query: String, after: String?, limit: Int) async throws -> [CustomerMatch] {
        try await read { session in
            let exact = query.isEmpty ? [] : try Self.exactMatches(session, query)
            // appUserIds starting with the query: one ordered range of the unique index, one page.
            let prefix = try session.query(
                """
                SELECT app_user_id, app_account_token, created_at FROM customers
                WHERE app_user_id >= \(query) AND app_user_id > \(after ?? "") AND app_user_id < \(query + "\u{10FFFF}") AND app_user_id NOT LIKE \(UnlinkedSubscription.prefix + "%")
                ORDER BY app_user_id LIMIT \(Int64(limit))
                """).map(Self.decodeMatch)
            var seen = Set<String>()
            return (exact.filter { match in after.map { match.appUserId > $0 } ?? true } + prefix)
                .filter { seen.insert($0.appUserId).inserted }
                .sorted { $0.appUserId < $1.appUserId }.prefix(limit).map { $0 }
        }
    }

    func exactCustomers(_ ids: [String]) async throws -> [CustomerMatch] {
        try await read { session in
            var seen = Set<String>()
            return try Set(ids.prefix(100)).sorted().flatMap { try Self.exactMatches(session, $0) }
                .filter { seen.insert($0.appUserId).inserted }.sorted { $0.appUserId < $1.appUserId }
        }
    }

    func knownTransactions(_ transactionIds: [String]) async throws -> Set<String> {
        try await read { session in
            try Set(transactionIds.prefix(100)).filter { id in
                try !session.query("SELECT 1 FROM facts WHERE \(Ledger.carrying(transactionId: id)) LIMIT 1").isEmpty
            }
        }
    }

    /// Customers one id names exactly: each an index lookup (customers, links, attribute values such
    /// as an email, facts by transaction id).
    static func exactMatches(_ session: any SQLSession, _ id: String) throws -> [CustomerMatch] {
        try session.query(
            """
            SELECT app_user_id, app_account_token, created_at FROM customers WHERE id IN (
                SELECT id FROM customers WHERE app_user_id = \(id) OR app_account_token = \(id.lowercased())
                UNION SELECT customer_id FROM links WHERE original_transaction_id = \(id)
                UNION SELECT customer_id FROM customer_attributes WHERE value = \(id)
                UNION SELECT l.customer_id FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
                    WHERE \(Ledger.carrying(transactionId: id)))
            """).map(decodeMatch)
    }

    static func decodeMatch(_ row: SQLRow) throws -> CustomerMatch {
        let match = try row.decode(MatchColumns.self)
        return CustomerMatch(appUserId: match.appUserId, appAccountToken: match.appAccountToken, createdAt: match.createdAt)
    }

    func ingestHealth(since: Int64, now: Int64) async throws -> IngestHealth {
        try await read { try Ledger(session: $0, fault: nil).ingestHealth(since: since, now: now) }
    }
}

/// A matched customer's columns.
private struct MatchColumns: Decodable {
    var appUserId: String
    var appAccountToken: String
    var createdAt: Int64
}

extension Ledger {
    /// The condition that finds the facts carrying transaction id `id` (a column of `facts` alone
    /// in the query), as their index holds them (``Schema/transactionIdsWithoutNotifications``):
    /// without the notification facts, whose transaction ids their transaction facts carry too.
    static func carrying(transactionId id: String) -> SQLQuery {
        "transaction_id = \(id) AND kind <> 'notification'"
    }
}
