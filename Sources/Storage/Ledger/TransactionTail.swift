// The writes that many concurrent transactions share ("hot" rows and locks), made last.
//
// Lock order (PostgreSQL; docs/storage.md "Lock order"). A write transaction takes its locks in
// two phases:
// 1. While its jobs run: locks of the entities it works on — advisory locks per subscription,
//    token and user (sorted within a job), customer rows (`FOR NO KEY UPDATE`), their projection,
//    metric and fact rows.
// 2. Just before COMMIT, once, in this order and in sorted key order within each: the
//    transaction's rollup shard (``RollupShards``: a try lock, never a wait), its shard's
//    `metric_daily` rows, `chart_daily` rows, `chart_segment_daily` rows, `ingest_hourly` rows,
//    `ingest_latest` rows, then the outbox lock (`pg_advisory_xact_lock` on
//    `entitled.events.<schema>`) and the transaction's events.
// A transaction in phase 2 never waits for a phase-1 lock, and every phase-2 transaction takes
// the shared rows in the same order, so the shared rows cannot be part of a deadlock however
// many servers and group commits run at once. (Phase-1 locks of two groups can still meet when
// both touch the same two customers; those are rare and retried by the store.) On PostgreSQL
// phase 2 and the COMMIT go in one pipeline (``PostgresTail``): the shared rows and the outbox
// lock are held only while the server runs it, never across a round trip.
//
// Why the shared rows are sharded: the top of RollupShards.swift.

/// A transaction's share of the hot writes, collected while its jobs run and written by
/// ``statements(dialect:)`` right before the commit, summed per row and in the lock order above.
///
/// Owned by the session (one per connection, used by its thread only). The store's commit loop
/// calls ``begin()`` at `BEGIN`, ``release()`` when a job's savepoint is released and
/// ``rollBack()`` when it is rolled back, so a failed job's share is dropped with its rows.
final class TransactionTail {
    /// One job's (or the released jobs') writes.
    struct Share {
        var metrics: [MetricRowKey: Int64] = [:]
        var charts: [ChartRowKey: Int64] = [:]
        var hourly: [HourlyKey: Int64] = [:]
        var latest: [LatestKey: Int64] = [:]
        var events: [PendingEvent] = []
        /// A fold of the journal ran: the rollup change goes to the rows, not back into the journal.
        var folds = false

        var isEmpty: Bool { metrics.isEmpty && charts.isEmpty && hourly.isEmpty && latest.isEmpty && events.isEmpty }

        mutating func merge(_ other: Share) {
            metrics.merge(other.metrics, uniquingKeysWith: +)
            charts.merge(other.charts, uniquingKeysWith: +)
            hourly.merge(other.hourly, uniquingKeysWith: +)
            latest.merge(other.latest, uniquingKeysWith: max)
            events += other.events
            folds = folds || other.folds
        }
    }

    /// An `ingest_hourly` row of the transaction's shard: hour since the epoch, code.
    struct HourlyKey: Hashable, Comparable {
        var hour: Int64
        var code: String
        static func < (a: Self, b: Self) -> Bool { (a.hour, a.code) < (b.hour, b.code) }
    }

    /// An `ingest_latest` row of the transaction's shard: app, environment.
    struct LatestKey: Hashable, Comparable {
        var bundleId: String
        var environment: String
        static func < (a: Self, b: Self) -> Bool { (a.bundleId, a.environment) < (b.bundleId, b.environment) }
    }

    /// An outbox event to append, and the customer row it belongs to.
    struct PendingEvent {
        var event: OutboxEvent
        /// `event.answer` as stored (``EventAnswer``), compressed when the event was appended.
        var answerPacked: [UInt8]
        var customerID: Int64?
    }

    /// Where the rollup change goes (``RollupWrites``): nil, straight to the rows; else one
    /// `rollup_journal` row, and this folder is told.
    var journal: RollupFolder?

    /// What released jobs (or a job without a savepoint) wrote.
    private var kept = Share()
    /// What the running job wrote since its savepoint.
    private var current = Share()

    /// A new transaction: forget anything of an earlier one (rolled back or failed).
    func begin() {
        kept = Share()
        current = Share()
    }

    /// The running job's savepoint was released: its share stays.
    func release() {
        kept.merge(current)
        current = Share()
    }

    /// The running job's savepoint was rolled back: so is its share.
    func rollBack() {
        current = Share()
    }

    func addMetric(_ key: MetricRowKey, _ value: Int64) {
        current.metrics[key, default: 0] += value
    }

    func addChart(_ key: ChartRowKey, _ value: Int64) {
        current.charts[key, default: 0] += value
    }

    /// Adds a fold's change (``Ledger/foldRollupJournal(limit:)``): this transaction writes its
    /// rollup change to the rows.
    func fold(_ change: RollupChange) {
        current.metrics.merge(change.metrics, uniquingKeysWith: +)
        current.charts.merge(change.charts, uniquingKeysWith: +)
        current.folds = true
    }

    func countMessage(hour: Int64, code: String) {
        current.hourly[HourlyKey(hour: hour, code: code), default: 0] += 1
    }

    func noteLatest(bundleId: String, environment: String, receivedAt: Int64) {
        let key = LatestKey(bundleId: bundleId, environment: environment)
        current.latest[key] = max(current.latest[key] ?? receivedAt, receivedAt)
    }

    func appendEvent(_ event: OutboxEvent, answerPacked: [UInt8], customerID: Int64?) {
        current.events.append(PendingEvent(event: event, answerPacked: answerPacked, customerID: customerID))
    }

    /// Drops the pending events of customers being erased in this transaction (their stored
    /// events are deleted by the same erasure).
    func dropEvents(customerIDs: Set<Int64>, appUserIds: Set<String>) {
        func erased(_ pending: PendingEvent) -> Bool {
            pending.customerID.map(customerIDs.contains) == true || pending.event.appUserId.map(appUserIds.contains) == true
        }
        kept.events.removeAll(where: erased)
        current.events.removeAll(where: erased)
    }

    /// Removes from the pending events' details every field ``Ledger/namingDetails`` lists whose
    /// value is one of `appUserIds` (customers erased in this transaction).
    func scrubDetails(naming appUserIds: Set<String>) {
        func scrub(_ events: inout [PendingEvent]) {
            for index in events.indices {
                events[index].event.details = Ledger.scrubbed(events[index].event, naming: appUserIds) ?? events[index].event.details
            }
        }
        scrub(&kept.events)
        scrub(&current.events)
    }

    /// Removes the running job's pending event `id` and returns it (to be written at once).
    func takeEvent(id: String) -> PendingEvent? {
        guard let index = current.events.lastIndex(where: { $0.event.id == id }) else { return nil }
        return current.events.remove(at: index)
    }

    /// The statements that write the transaction's share, in the lock order (see the top of this
    /// file): the rollup change summed per row, rows whose changes sum to nothing left out, as one
    /// journal row (``RollupWrites``) or into the rows of the transaction's shard
    /// (``RollupShards``) in multi-row statements (a chart change moves six rows); empties the tail.
    func statements(dialect: SQLDialect) -> [SQLQuery] {
        release()
        defer { kept = Share() }
        guard !kept.isEmpty else { return [] }
        var statements: [SQLQuery] = []
        let change = RollupChange(metrics: kept.metrics, charts: kept.charts).nonzero
        let journaled = journal != nil && !kept.folds && !change.isEmpty
        let direct = journaled ? RollupChange() : change
        if dialect == .postgres && !(direct.isEmpty && kept.hourly.isEmpty && kept.latest.isEmpty) {
            statements.append(RollupShards.choose)
        }
        let shard = RollupShards.value(dialect)
        if journaled {
            statements.append("INSERT INTO rollup_journal (body) VALUES (\(change.encoded))")
            journal?.journalWritten()
        } else {
            statements += Self.rollupStatements(direct, shard: shard)
        }
        for (key, count) in kept.hourly.sorted(by: { $0.key < $1.key }) {
            statements.append(IngestCounters.addCount(hour: key.hour, code: key.code, shard: shard, count: count))
        }
        for (key, receivedAt) in kept.latest.sorted(by: { $0.key < $1.key }) {
            statements.append(
                IngestCounters.advanceLatest(bundleId: key.bundleId, environment: key.environment, shard: shard, receivedAt: receivedAt))
        }
        if !kept.events.isEmpty {
            // PostgreSQL: `seq` is drawn at the insert but seen at the commit, so concurrent
            // appenders could commit out of `seq` order and a reader paging by `seq` skip one. This
            // lock, held to the commit that follows at once, makes appends commit in `seq` order.
            // One lock per schema: servers of other schemas in the database never wait for it.
            if dialect == .postgres {
                statements.append(("SELECT pg_advisory_xact_lock(hashtextextended('entitled.events.' || current_schema(), 0))" as SQLQuery))
            }
            for pending in kept.events { statements.append(Ledger.insertEventStatement(pending)) }
        }
        return statements
    }

    /// `change` added to the rollup rows of `shard`: each rollup's rows in key order.
    private static func rollupStatements(_ change: RollupChange, shard: SQLQuery) -> [SQLQuery] {
        let charts = change.charts.sorted(by: { $0.key < $1.key })
        var segmented: [ChartSegmentRowKey: Int64] = [:]
        for (key, value) in charts {
            for row in ChartSegmentRowKey.rows(of: key) { segmented[row, default: 0] += value }
        }
        return Ledger.addMetrics(change.metrics.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }, shard: shard)
            + Ledger.addCharts(charts.map { ($0.key, $0.value) }, shard: shard)
            + Ledger.addChartSegments(
                segmented.filter { $0.value != 0 }.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }, shard: shard)
    }

    /// Writes the transaction's share (``statements(dialect:)``) on `session`, in one round trip.
    func flush(_ session: any SQLSession) throws {
        let statements = statements(dialect: session.dialect)
        if !statements.isEmpty { _ = try session.pipeline(statements) }
    }
}
