import Entitlements

// The metric rollups: each customer's contribution (`customer_metrics`, the engine's
// `metricDeltas`) and their sum per environment, day, series and currency (`metric_daily`).
// Written in the projection's transaction: when a customer's contribution changes, only the
// difference is added to the daily rows, so a read never looks at the ledger.

extension Ledger {
    /// A customer's stored contribution; nil when none was computed yet (a customer from before
    /// schema version 15 that the backfill has not reached).
    func storedMetrics(customerID: Int64) throws -> StoredMetrics? {
        try storedMetricsText(customerID: customerID).map(MetricCodec.decode)
    }

    /// The stored contribution as ``MetricCodec`` wrote it, not decoded.
    private func storedMetricsText(customerID: Int64) throws -> String? {
        try session.value("SELECT deltas FROM customer_metrics WHERE customer_id = \(customerID)", as: String.self)
    }

    /// Recomputes a customer's contribution from `facts` and adds its change to the daily rows.
    /// With `ids` (the ledger ids of `facts`, one each), only the days from the earliest new
    /// fact's date on are evaluated again: the facts the stored contribution was computed from
    /// are recognised by its basis (the highest fact id it saw and how many facts). Without `ids`
    /// (a rebuild: the policy may have changed) or when the old facts are not exactly those (a
    /// customer merge brought older facts), everything is computed again.
    func updateMetrics(customerID: Int64, facts: [Fact], ids: [Int64]? = nil, projector: Projector) throws {
        guard projector.maintainsMetrics else { return }
        let text = try storedMetricsText(customerID: customerID)
        let basis = ids.map { ids in MetricBasis(maxFactID: ids.max() ?? 0, factCount: ids.count) }
        // The basis alone says whether any fact is new: without one (an event hold's release, a
        // repeated recomputation) the stored rows are not even decoded.
        var from: Int64?
        if let ids, let old = text.flatMap(MetricCodec.basis), ids.count == facts.count,
           ids.count(where: { $0 <= old.maxFactID }) == old.factCount {
            let newDays = zip(ids, facts).filter { $0.0 > old.maxFactID }.map { metricDay($0.1.date) }
            guard let first = newDays.min() else { return }  // No new fact: the same contribution.
            from = first
        }
        let stored = text.map(MetricCodec.decode)
        let reuse = from.map { (deltas: stored?.deltas ?? [], from: $0) }
        let contribution = metricContribution(facts: facts, policy: projector.policy, reusing: reuse, reusingCharts: stored?.charts ?? [])
        let fresh = StoredMetrics(deltas: contribution.deltas, charts: contribution.charts, basis: basis)
        if stored == fresh { return }
        var change: [MetricRowKey: Int64] = [:]
        for delta in stored?.deltas ?? [] { change[MetricRowKey(delta), default: 0] -= delta.value }
        for delta in fresh.deltas { change[MetricRowKey(delta), default: 0] += delta.value }
        var chartChange: [ChartRowKey: Int64] = [:]
        for delta in stored?.charts ?? [] { chartChange[ChartRowKey(delta), default: 0] -= delta.value }
        for delta in fresh.charts { chartChange[ChartRowKey(delta), default: 0] += delta.value }
        // The daily rows are shared by every transaction: their change waits for the commit
        // (``TransactionTail``); the customer's own row is written now, under the customer's lock.
        for (key, value) in change where value != 0 { session.tail.addMetric(key, value) }
        for (key, value) in chartChange where value != 0 { session.tail.addChart(key, value) }
        try session.query(
            """
            INSERT INTO customer_metrics (customer_id, deltas) VALUES (\(customerID), \(MetricCodec.encode(fresh)))
            ON CONFLICT (customer_id) DO UPDATE SET deltas = excluded.deltas
            """)
    }

    /// Adds `change` to one daily row in `shard` (nil: the layout before ``RollupShards``), for
    /// ``Schema/forgetPlayRollups``, a migration that runs on either layout.
    static func addMetric(environment: String, day: Int64, kind: String, currency: String, change: Int64, shard: SQLQuery?) -> SQLQuery {
        let key = MetricRowKey(environment: environment, day: day, kind: kind, currency: currency)
        return addMetrics([(key, change)], shard: shard)[0]
    }

    /// Adds each change to its daily row in `shard` (nil: the layout before shards),
    /// several rows a statement (``rollupUpserts(into:columns:key:shard:rows:)``), in the order
    /// given: the keys must be distinct (a statement may change a row once).
    static func addMetrics(_ changes: [(key: MetricRowKey, change: Int64)], shard: SQLQuery?) -> [SQLQuery] {
        rollupUpserts(
            into: "metric_daily", key: "environment, day, kind, currency", shard: shard,
            rows: changes.map { row -> (key: SQLQuery, change: Int64) in
                ("\(row.key.environment), \(row.key.day), \(row.key.kind), \(row.key.currency)", row.change)
            })
    }

    /// Upserts into a rollup `table` keyed by the columns `key` (each row's key values, in that
    /// order, and its change), in `shard` (the column after the key; nil: a table without one),
    /// adding the change to a stored value: at most 64 rows a statement, so a customer's change is
    /// one statement per rollup rather than one per row, while the texts a connection prepares
    /// (and caches) stay few and every statement's binds far below either database's limit.
    /// `table` and `key` are this module's own constants; `shard` is ``RollupShards/value(_:)``.
    static func rollupUpserts(into table: String, key: String, shard: SQLQuery?, rows: [(key: SQLQuery, change: Int64)]) -> [SQLQuery] {
        let key = shard == nil ? key : key + ", shard"
        let (table, columns) = (SQLQuery(verbatim: table), SQLQuery(verbatim: key))
        let tuples = rows.map { row -> SQLQuery in
            guard let shard else { return "(\(row.key), \(row.change))" }
            return "(\(row.key), \(shard), \(row.change))"
        }
        return stride(from: 0, to: tuples.count, by: 64).map { start in
            let values = SQLQuery.joined(Array(tuples[start..<min(start + 64, tuples.count)]), separator: ", ")
            return "INSERT INTO \(table) (\(columns), value) VALUES \(values) ON CONFLICT (\(columns)) DO UPDATE SET value = \(table).value + excluded.value"
        }
    }

    /// Computes the contribution of up to `limit` customers that have none stored yet (the
    /// backfill after schema version 15): returns how many it did. A customer whose facts do
    /// not decode gets an empty contribution (their projection is marked failed anyway).
    func backfillMetricsChunk(limit: Int, projector: Projector) throws -> Int {
        let ids = try session.values(
            """
            SELECT c.id FROM customers c LEFT JOIN customer_metrics m ON m.customer_id = c.id
            WHERE m.customer_id IS NULL ORDER BY c.id LIMIT \(Int64(limit))
            """, as: Int64.self)
        for id in ids {
            let rows = try session.query(factsWithoutJWS(of: id))
            let facts = (try? Self.engineFacts(rows, projector: projector, known: [:])) ?? []
            try updateMetrics(customerID: id, facts: facts, projector: projector)
            if try storedMetrics(customerID: id) == nil {
                try session.query("INSERT INTO customer_metrics (customer_id, deltas) VALUES (\(id), '')")
            }
        }
        return ids.count
    }

    /// The daily rows of `environment` from `fromDay` to `toDay` (each the sum of its shards), and
    /// the stocks' levels at the start of `fromDay` (the sum of every earlier day's change), each
    /// in ``rollupOrder(_:_:)``; the journal's changes not folded yet are not included
    /// (``RollupChange/adding(to:environment:fromDay:toDay:)``).
    func metricRollup(environment: String, fromDay: Int64, toDay: Int64) throws -> MetricRollup {
        let stocks = MetricKind.allCases.filter(\.isStock).map(\.rawValue)
        let base = try session.rows(
            """
            SELECT CAST(\(fromDay) AS BIGINT) AS day, kind, currency, SUM(value) AS value FROM metric_daily
            WHERE environment = \(environment) AND day < \(fromDay) AND kind IN (\(list: stocks)) GROUP BY kind, currency
            """, as: DailyRow.self)
        let days = try session.rows(
            """
            SELECT day, kind, currency, SUM(value) AS value FROM metric_daily
            WHERE environment = \(environment) AND day >= \(fromDay) AND day <= \(toDay)
            GROUP BY day, kind, currency HAVING SUM(value) <> 0
            """, as: DailyRow.self)
        var rollup = MetricRollup()
        rollup.unlinkedActive = try session.value(
            """
            SELECT COUNT(*) FROM subscription_projections s JOIN customers c ON c.id = s.customer_id
            WHERE \(Self.isUnlinked("c.app_user_id", session.dialect)) AND s.environment = \(environment) AND s.status IN ('active', 'gracePeriod')
            """, as: Int64.self) ?? 0
        for row in base where row.value != 0 {
            guard let kind = MetricKind(rawValue: row.kind) else { continue }
            rollup.opening.append(MetricDelta(environment: Environment(rawValue: environment), day: row.day, kind: kind,
                                              currency: row.currency, value: row.value))
        }
        for row in days {
            guard let kind = MetricKind(rawValue: row.kind) else { continue }
            rollup.days.append(MetricDelta(environment: Environment(rawValue: environment), day: row.day, kind: kind,
                                           currency: row.currency, value: row.value))
        }
        rollup.opening.sort(by: Self.rollupOrder)
        rollup.days.sort(by: Self.rollupOrder)
        return rollup
    }

    /// The order of a rollup's rows: by day, series and currency, as bytes (the same on both
    /// databases, whatever PostgreSQL's collation).
    static func rollupOrder(_ a: MetricDelta, _ b: MetricDelta) -> Bool {
        if a.day != b.day { return a.day < b.day }
        if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
        return a.currency < b.currency
    }

    /// `column` holds a placeholder key (``UnlinkedSubscription``). On SQLite (binary collation) a
    /// range over the prefix, which the index on `app_user_id` answers: a LIKE with a bound pattern
    /// scans every customer. PostgreSQL keeps the LIKE: under a locale collation a range over
    /// control characters would not mean the same.
    static func isUnlinked(_ column: String, _ dialect: SQLDialect) -> SQLQuery {
        let name = SQLQuery(verbatim: column)
        switch dialect {
        case .sqlite:
            // The first key after every one that starts with the prefix: its last character's successor.
            let after = String(UnlinkedSubscription.prefix.dropLast()) + ";"
            return "\(name) >= \(UnlinkedSubscription.prefix) AND \(name) < \(after)"
        case .postgres:
            return "\(name) LIKE \(UnlinkedSubscription.prefix + "%")"
        }
    }
}

/// One `metric_daily` row, or a series' sum before a window (dated its first day).
private struct DailyRow: Decodable {
    var day: Int64
    var kind: String
    var currency: String
    var value: Int64
}

/// One daily row's key, in storage's words.
struct MetricRowKey: Hashable, Comparable {
    var environment: String
    var day: Int64
    var kind: String
    var currency: String

    init(environment: String, day: Int64, kind: String, currency: String) {
        (self.environment, self.day, self.kind, self.currency) = (environment, day, kind, currency)
    }

    init(_ delta: MetricDelta) {
        environment = delta.environment.rawValue
        day = delta.day
        kind = delta.kind.rawValue
        currency = delta.currency
    }

    static func < (a: Self, b: Self) -> Bool {
        (a.environment, a.day, a.kind, a.currency) < (b.environment, b.day, b.kind, b.currency)
    }
}

/// What the stored contribution was computed from: the ledger's fact ids only grow, so the facts
/// a customer had then are those with an id up to `maxFactID`, if there are still `factCount` of them.
struct MetricBasis: Hashable {
    var maxFactID: Int64
    var factCount: Int
}

/// One customer's stored contribution and its basis (nil: unknown, computed in full next time).
struct StoredMetrics: Hashable {
    var deltas: [MetricDelta]
    /// The chart rows (``ChartDelta``).
    var charts: [ChartDelta] = []
    var basis: MetricBasis?
}

/// `customer_metrics.deltas`: an optional basis line (`#`, max fact id, fact count), then one delta
/// a line, tab-separated (environment, day, kind, currency, value), then one chart row a line
/// (`c`, environment, day, kind, currency, store, product, storefront, period type, month
/// offset, value). Environments and currencies are Apple's tokens, products and storefronts
/// the app's; a tab or newline in one is dropped.
enum MetricCodec {
    /// Written into one string as it goes: every ingest writes its customer's contribution, and
    /// an array of fields joined per line, then the lines joined, cost a sixth of the rollups.
    static func encode(_ stored: StoredMetrics) -> String {
        var text = ""
        text.reserveCapacity(24 + 48 * stored.deltas.count + 80 * stored.charts.count)
        /// Each field after the line's first: a tab, then the field.
        func field(_ value: String) {
            text += "\t"
            text += value
        }
        func line() { if !text.isEmpty { text += "\n" } }
        if let basis = stored.basis {
            text += "#"
            field(String(basis.maxFactID))
            field(String(basis.factCount))
        }
        for d in stored.deltas {
            line()
            text += clean(d.environment.rawValue)
            field(String(d.day))
            field(d.kind.rawValue)
            field(clean(d.currency))
            field(String(d.value))
        }
        for d in stored.charts {
            line()
            text += "c"
            field(clean(d.environment.rawValue))
            field(String(d.day))
            field(d.kind.rawValue)
            field(clean(d.currency))
            field(clean(d.segment.store))
            field(clean(d.segment.product))
            field(clean(d.segment.storefront))
            field(clean(d.segment.periodType))
            field(String(d.offset))
            field(String(d.value))
        }
        return text
    }

    /// The basis line of `text` alone (nil: none), read without decoding the rows after it.
    static func basis(_ text: String) -> MetricBasis? {
        guard text.utf8.first == UInt8(ascii: "#") else { return nil }
        let line = text.utf8.prefix { $0 != UInt8(ascii: "\n") }
        let parts = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
        guard parts.count == 3, let id = Int64(String(decoding: parts[1], as: UTF8.self)),
              let count = Int(String(decoding: parts[2], as: UTF8.self)) else { return nil }
        return MetricBasis(maxFactID: id, factCount: count)
    }

    static func decode(_ text: String) -> StoredMetrics {
        var stored = StoredMetrics(deltas: [], basis: basis(text))
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
            // The basis line, read by ``basis(_:)`` (``encode(_:)`` writes it first).
            if parts.count == 3, parts[0] == "#" { continue }
            if parts.count == 11, parts[0] == "c" {
                guard let day = Int64(parts[2]), let kind = ChartKind(rawValue: String(parts[3])), let offset = Int64(parts[9]),
                      let value = Int64(parts[10]) else { continue }
                let segment = ChartSegment(
                    store: String(parts[5]), product: String(parts[6]), storefront: String(parts[7]), periodType: String(parts[8]))
                stored.charts.append(ChartDelta(environment: Environment(rawValue: String(parts[1])), day: day, kind: kind,
                                                currency: String(parts[4]), segment: segment, offset: offset, value: value))
                continue
            }
            guard parts.count == 5, let day = Int64(parts[1]), let kind = MetricKind(rawValue: String(parts[2])),
                  let value = Int64(parts[4]) else { continue }
            stored.deltas.append(MetricDelta(environment: Environment(rawValue: String(parts[0])), day: day, kind: kind,
                                             currency: String(parts[3]), value: value))
        }
        return stored
    }

    /// `text` without tabs and newlines (the format's separators). Almost every text has none
    /// and is returned as it is, without building a new string.
    static func clean(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") }) else { return text }
        return String(text.unicodeScalars.filter { $0 != "\t" && $0 != "\n" })
    }
}
