import Entitlements
import Synchronization

// Why a journal: a commit's rollup change is about a hundred rows (a new subscription moves some
// sixteen `chart_daily` rows, five `chart_segment_daily` rows each, and the day's metric rows),
// and on PostgreSQL every one is an upsert — an index probe, a new row version, WAL — on rows
// that every other commit of the day writes too: they were 45 % of PostgreSQL's statement time
// per notification (docs/operations.md, "The rollup journal").
//
// Journaled, a transaction appends its whole change (already summed over its jobs) to
// `rollup_journal` as one row instead. Within about ``RollupFolder/delay`` a fold takes the
// journal's rows, sums them — the commits of those moments move the same few rows of today, so
// dozens of commits' changes come down to the rows of one — and adds the sums to the rollup tables in one
// transaction that deletes the rows it folded. A change is therefore always in exactly one place:
// in the journal, or in the rollups, never both and never neither; a read of the rollups adds the
// journal's rows in the same snapshot (``Ledger/journaledChanges()``), so what it returns is the
// same as if every change had been written directly. Several servers on one database fold each
// other's rows: a fold locks the rows it takes (`SKIP LOCKED`), so two folds never take one row.
//
// The plain path, ``RollupWrites/direct`` (every transaction upserts its own rows, SQLite's
// default: its single writer already sums a whole group commit's change first), is what the
// differential tests compare the journal with. A migration that rewrites the rollups must fold the
// journal first.

/// How a transaction's rollup change reaches the rollup tables (`metric_daily`, `chart_daily`,
/// `chart_segment_daily`); see the top of this file.
enum RollupWrites: Sendable {
    /// Each transaction adds its change to the rollup rows before it commits.
    case direct
    /// Each transaction appends its change to `rollup_journal`; ``RollupFolder`` adds it to the rows.
    case journaled

    /// The default on `dialect`: journaled on PostgreSQL, direct on SQLite.
    static func standard(_ dialect: SQLDialect) -> RollupWrites { dialect == .postgres ? .journaled : .direct }
}

/// A summed rollup change in storage's words: what one journal row holds.
struct RollupChange: Equatable {
    var metrics: [MetricRowKey: Int64] = [:]
    var charts: [ChartRowKey: Int64] = [:]

    var isEmpty: Bool { metrics.isEmpty && charts.isEmpty }

    mutating func add(_ other: RollupChange) {
        metrics.merge(other.metrics, uniquingKeysWith: +)
        charts.merge(other.charts, uniquingKeysWith: +)
    }

    /// The change without the rows whose changes sum to nothing.
    var nonzero: RollupChange {
        RollupChange(metrics: metrics.filter { $0.value != 0 }, charts: charts.filter { $0.value != 0 })
    }

    /// A journal row's text: the lines of ``MetricCodec`` (a metric row: environment, day, kind,
    /// currency, change; a chart row: `c`, environment, day, kind, currency, store, product,
    /// storefront, period type, month offset, change), in key order. Kinds stay text: a row
    /// written by a newer build that an older one folds keeps series it does not know.
    var encoded: String {
        var text = ""
        text.reserveCapacity(48 * metrics.count + 80 * charts.count)
        func field(_ value: String) {
            text += "\t"
            text += MetricCodec.clean(value)
        }
        for (key, value) in metrics.sorted(by: { $0.key < $1.key }) {
            if !text.isEmpty { text += "\n" }
            text += MetricCodec.clean(key.environment)
            field(String(key.day)); field(key.kind); field(key.currency); field(String(value))
        }
        for (key, value) in charts.sorted(by: { $0.key < $1.key }) {
            if !text.isEmpty { text += "\n" }
            text += "c"
            field(key.environment); field(String(key.day)); field(key.kind); field(key.currency)
            field(key.store); field(key.product); field(key.storefront); field(key.periodType)
            field(String(key.offset)); field(String(value))
        }
        return text
    }

    /// The change an ``encoded`` text holds; a line it cannot read is left out.
    init(encoded text: String) {
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            if parts.count == 11, parts[0] == "c" {
                guard let day = Int64(parts[2]), let offset = Int64(parts[9]), let value = Int64(parts[10]) else { continue }
                let key = ChartRowKey(
                    environment: parts[1], kind: parts[3], day: day, currency: parts[4], store: parts[5], product: parts[6],
                    storefront: parts[7], periodType: parts[8], offset: offset)
                charts[key, default: 0] += value
            } else if parts.count == 5, let day = Int64(parts[1]), let value = Int64(parts[4]) {
                metrics[MetricRowKey(environment: parts[0], day: day, kind: parts[2], currency: parts[3]), default: 0] += value
            }
        }
    }

    /// The sum of the changes journal rows' texts hold.
    init(summing texts: [String]) {
        for text in texts { add(RollupChange(encoded: text)) }
    }

    init(metrics: [MetricRowKey: Int64] = [:], charts: [ChartRowKey: Int64] = [:]) {
        (self.metrics, self.charts) = (metrics, charts)
    }
}

extension Ledger {
    /// Journal rows folded per fold transaction at most.
    static let foldLimit = 1000

    /// Takes up to `limit` of the journal's rows (oldest first; on PostgreSQL only rows no other
    /// fold holds) and hands their summed change to the transaction's tail, to be added to the
    /// rollup rows at the commit that deletes them (``TransactionTail/fold(_:)``). Returns how many
    /// rows it took.
    func foldRollupJournal(limit: Int = foldLimit) throws -> Int {
        let skip: SQLQuery = session.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        let bodies = try session.values(
            """
            DELETE FROM rollup_journal WHERE id IN (SELECT id FROM rollup_journal ORDER BY id LIMIT \(Int64(limit))\(skip))
            RETURNING body
            """, as: String.self)
        session.tail.fold(RollupChange(summing: bodies))
        return bodies.count
    }

    /// Every change still in the journal, summed: what a read of the rollups adds to their rows,
    /// in the read's snapshot.
    func journaledChanges() throws -> RollupChange {
        RollupChange(summing: try session.values("SELECT body FROM rollup_journal", as: String.self)).nonzero
    }
}

/// Folds the journal in the background: told of each journaled commit (``journalWritten()``), it
/// folds ``delay`` (by default) after the first journal row since its last fold, so the journal
/// holds about that long's commits and a fold sums many. One fold at a time per store; ``close()``
/// folds what this store wrote since.
final class RollupFolder: Sendable {
    /// How long a journal row waits for its fold at most, beside the fold itself: long enough that
    /// a fold sums the change of many commits, short enough that the journal a read adds stays small.
    static let delay: Duration = .milliseconds(100)

    private struct State {
        var fold: (@Sendable () async -> Void)?
        var task: Task<Void, Never>?
        /// A journal row was written since the last fold began.
        var written = false
        var closed = false
    }

    private let state = Mutex(State())
    private let delay: Duration

    init(delay: Duration = RollupFolder.delay) {
        self.delay = delay
    }

    /// What a fold runs: the store's fold until the journal is empty (set once the store exists).
    func start(_ fold: @escaping @Sendable () async -> Void) {
        state.withLock { $0.fold = fold }
    }

    /// A transaction appended a journal row.
    func journalWritten() {
        state.withLock { state in
            state.written = true
            if state.task == nil, !state.closed, let fold = state.fold { state.task = schedule(fold) }
        }
    }

    private func schedule(_ fold: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task {
            // Cancelled by close(): fold at once.
            try? await Task.sleep(for: delay)
            state.withLock { $0.written = false }
            await fold()
            // Rows written while it folded: another fold.
            state.withLock { state in state.task = state.written && !state.closed ? schedule(fold) : nil }
        }
    }

    /// Stops scheduling, waits for a fold under way, then folds what this store wrote since.
    func close() async {
        while true {
            let (task, fold) = state.withLock { state in
                state.closed = true
                return (state.task, state.fold)
            }
            if let task {
                task.cancel()
                await task.value
                state.withLock { if $0.task == task { $0.task = nil } }
                continue
            }
            if state.withLock({ state in defer { state.written = false }; return state.written }) { await fold?() }
            return
        }
    }
}

// What a read of the rollups adds from the journal: the same sums its SQL takes over the rows,
// taken over the journal's change, and added to what the SQL returned.
extension RollupChange {
    /// `rollup` (``Ledger/metricRollup(environment:fromDay:toDay:)``'s rows) with this change's
    /// metric rows of `environment` added: days in the range to their day, stocks' earlier days to
    /// the opening levels; zeros left out, each in ``Ledger/rollupOrder(_:_:)``.
    func adding(to rollup: MetricRollup, environment: String, fromDay: Int64, toDay: Int64) -> MetricRollup {
        let rows = metrics.filter { $0.key.environment == environment && $0.value != 0 }
        guard !rows.isEmpty else { return rollup }
        var opening = Summed<MetricRowKey>(), days = Summed<MetricRowKey>()
        for delta in rollup.opening { opening.add(MetricRowKey(delta), delta.value) }
        for delta in rollup.days { days.add(MetricRowKey(delta), delta.value) }
        for (key, value) in rows {
            guard let kind = MetricKind(rawValue: key.kind) else { continue }
            if key.day >= fromDay && key.day <= toDay {
                days.add(key, value)
            } else if key.day < fromDay && kind.isStock {
                opening.add(MetricRowKey(environment: environment, day: fromDay, kind: key.kind, currency: key.currency), value)
            }
        }
        func deltas(_ sums: Summed<MetricRowKey>) -> [MetricDelta] {
            sums.nonzero.compactMap { key, value in
                MetricKind(rawValue: key.kind).map {
                    MetricDelta(environment: Environment(rawValue: key.environment), day: key.day, kind: $0, currency: key.currency, value: value)
                }
            }
        }
        var merged = rollup
        merged.opening = deltas(opening).sorted(by: Ledger.rollupOrder)
        merged.days = deltas(days).sorted(by: Ledger.rollupOrder)
        return merged
    }

    /// `rows` (a chart read's) with this change's chart rows added as that read sums them: of
    /// `environments` and `kinds`, held to `filter`, every segment column but those of `segments`
    /// read as empty; days in the range to their day, stocks' earlier days to the opening levels.
    func adding(
        to rows: ChartRows, environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>,
        filter: ChartFilter
    ) -> ChartRows {
        let environments = Set(environments), kinds = Set(kinds)
        var journaled: [(row: ChartDelta, isDay: Bool)] = []
        for (key, value) in charts where value != 0 && environments.contains(key.environment) {
            guard var row = key.delta(value), kinds.contains(row.kind) else { continue }
            let held = ChartSegmentation.allCases.allSatisfy { segmentation in
                filter.value(segmentation).map { $0 == segmentation.value(row) } ?? true
            }
            guard held else { continue }
            if !segments.contains(.store) { row.segment.store = "" }
            if !segments.contains(.product) { row.segment.product = "" }
            if !segments.contains(.storefront) { row.segment.storefront = "" }
            if !segments.contains(.periodType) { row.segment.periodType = "" }
            if row.day >= fromDay && row.day <= toDay {
                journaled.append((row, true))
            } else if row.day < fromDay && row.kind.isStock {
                row.day = fromDay
                journaled.append((row, false))
            }
        }
        guard !journaled.isEmpty else { return rows }
        var opening = Summed<ChartRowKey>(), days = Summed<ChartRowKey>()
        for delta in rows.opening { opening.add(ChartRowKey(delta), delta.value) }
        for delta in rows.days { days.add(ChartRowKey(delta), delta.value) }
        for (row, isDay) in journaled {
            if isDay { days.add(ChartRowKey(row), row.value) } else { opening.add(ChartRowKey(row), row.value) }
        }
        func deltas(_ sums: Summed<ChartRowKey>) -> [ChartDelta] { sums.nonzero.compactMap { key, value in key.delta(value) } }
        return ChartRows(opening: deltas(opening), days: deltas(days))
    }
}

/// Sums by key, in the order keys were first seen.
private struct Summed<Key: Hashable> {
    private var order: [Key] = []
    private var sums: [Key: Int64] = [:]

    mutating func add(_ key: Key, _ value: Int64) {
        if sums[key] == nil { order.append(key) }
        sums[key, default: 0] += value
    }

    /// The keys whose sums are not zero, with their sums, in first-seen order.
    var nonzero: [(Key, Int64)] { order.compactMap { key in sums[key].flatMap { $0 == 0 ? nil : (key, $0) } } }
}
