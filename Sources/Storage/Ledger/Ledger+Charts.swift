import Entitlements

// The charts' rollups (`chart_daily`): every customer's chart rows (``ChartDelta``, kept with
// their metric contribution in `customer_metrics`) summed per environment, series, day, currency,
// segment and month offset. Beside them, `chart_segment_daily` holds the same sums per one
// segmentation at a time (none, store, product, storefront or period type), written with them in
// the same transaction: what a chart asks for, so its read is one range of days per series that
// returns every row it reads, never the ledger and never a sort. Each row is split over the
// writers' shards (``RollupShards``, last in the key): a read sums a key's shards, adjacent in
// the key's order.

extension Ledger {
    /// Adds `change` to one chart row in `shard` (nil: the layout before ``RollupShards``), for
    /// ``Schema/forgetPlayRollups``.
    static func addChart(_ key: ChartRowKey, change: Int64, shard: SQLQuery?) -> SQLQuery { addCharts([(key, change)], shard: shard)[0] }

    /// Adds each change to its chart row in `shard` (nil: the layout before shards), several rows
    /// a statement (``rollupUpserts(into:key:shard:rows:)``), in the order given: the keys must
    /// be distinct.
    static func addCharts(_ changes: [(key: ChartRowKey, change: Int64)], shard: SQLQuery?) -> [SQLQuery] {
        rollupUpserts(
            into: "chart_daily", key: "environment, kind, day, currency, store, product, storefront, period_type, month_offset", shard: shard,
            rows: changes.map { key, change -> (key: SQLQuery, change: Int64) in
                ("\(key.environment), \(key.kind), \(key.day), \(key.currency), \(key.store), \(key.product), \(key.storefront), \(key.periodType), \(key.offset)",
                 change)
            })
    }

    /// Adds each change to its row of the charts' rollups per segmentation in `shard`, several
    /// rows a statement, in the order given: the keys must be distinct.
    static func addChartSegments(_ changes: [(key: ChartSegmentRowKey, change: Int64)], shard: SQLQuery) -> [SQLQuery] {
        rollupUpserts(
            into: "chart_segment_daily", key: "environment, kind, segmentation, day, currency, month_offset, segment", shard: shard,
            rows: changes.map { key, change -> (key: SQLQuery, change: Int64) in
                ("\(key.environment), \(key.kind), \(key.segmentation), \(key.day), \(key.currency), \(key.offset), \(key.segment)", change)
            })
    }

    /// `chart_segment_daily` computed from `chart_daily`, for a table that holds none of its rows
    /// (the migration that adds it, the benchmark's loader): one `INSERT … SELECT` per
    /// segmentation, the same sums the writes keep.
    static let fillChartSegments: [String] = {
        let segmentations: [(name: String, column: String)] = [("", "''")] + segmentColumns.map { ($0.segment.rawValue, $0.column) }
        return segmentations.map { name, column in
            let grouped = column == "''" ? "" : ", \(column)"
            return """
                INSERT INTO chart_segment_daily (environment, kind, segmentation, day, currency, month_offset, segment, value)
                SELECT environment, kind, '\(name)', day, currency, month_offset, \(column), SUM(value) FROM chart_daily
                GROUP BY environment, kind, day, currency, month_offset\(grouped) HAVING SUM(value) <> 0
                """
        }
    }()

    /// The chart rows of `kinds` in `environments` from `fromDay` to `toDay`, and the stocks'
    /// levels at the start of `fromDay`, summed over every segment column but those of `segments`
    /// (read as empty): a row per environment, series, day, currency, month offset and value of
    /// the kept segments, so what comes back grows with what the chart splits by, not with every
    /// segment that exists; only the rows whose segments hold `filter`'s values. One segment
    /// column at most, split by or filtered on (what the Charts API mostly asks), is read from
    /// `chart_segment_daily`, which holds exactly those rows; anything else from `chart_daily`
    /// (the only table that still has every column a filter reads), summed in SQL. The journal's
    /// changes not folded yet are not included (``RollupChange/adding(to:environments:kinds:fromDay:toDay:segments:filter:)``).
    func chartRows(
        environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>, filter: ChartFilter = ChartFilter()
    ) throws -> ChartRows {
        let kept = Self.segmentColumns.filter { segments.contains($0.segment) }
        let held = Self.segmentColumns.filter { filter.value($0.segment) != nil }
        guard kept.count <= 1, held.count <= 1, kept.isEmpty || held.allSatisfy({ $0.column == kept.first?.column }) else {
            return try chartRowsSummingEveryRow(
                environments: environments, kinds: kinds, fromDay: fromDay, toDay: toDay, segments: segments, filter: filter)
        }
        // One column at most is split by or filtered on (an unsplit chart filtered on one column
        // reads that column's sums at the value, its segment then read as empty).
        let segmentation = (kept.first ?? held.first)?.segment.rawValue ?? ""
        let only: SQLQuery = held.first.flatMap { filter.value($0.segment) }.map { (value: String) -> SQLQuery in "AND segment = \(value)" } ?? ""
        // The segment's value under its column's name, the other columns empty, as ``chartDeltas(_:)`` reads them.
        let select = SQLQuery(verbatim: Self.segmentColumns.map { $0.column == kept.first?.column ? "segment AS \($0.column)" : "'' AS \($0.column)" }
            .joined(separator: ", "))
        var rows = ChartRows()
        let stocks = kinds.filter(\.isStock).map(\.rawValue)
        if !stocks.isEmpty {
            rows.opening = try Self.chartDeltas(session.query(
                """
                SELECT environment, kind, CAST(\(fromDay) AS BIGINT) AS day, currency, \(select), month_offset, SUM(value) AS value
                FROM chart_segment_daily
                WHERE environment IN (\(list: environments)) AND kind IN (\(list: stocks)) AND segmentation = \(segmentation) AND day < \(fromDay) \(only)
                GROUP BY environment, kind, currency, month_offset, segment HAVING SUM(value) <> 0
                """))
        }
        rows.days = try Self.chartDeltas(session.query(
            """
            SELECT environment, kind, day, currency, \(select), month_offset, SUM(value) AS value FROM chart_segment_daily
            WHERE environment IN (\(list: environments)) AND kind IN (\(list: kinds.map(\.rawValue))) AND segmentation = \(segmentation)
            AND day >= \(fromDay) AND day <= \(toDay) \(only)
            GROUP BY environment, kind, day, currency, month_offset, segment HAVING SUM(value) <> 0
            """))
        return rows
    }

    /// ``chartRows(environments:kinds:fromDay:toDay:segments:filter:)`` from `chart_daily`, for any
    /// segments and filter: the plain sum the per-segmentation rows must equal.
    func chartRowsSummingEveryRow(
        environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>, filter: ChartFilter = ChartFilter()
    ) throws -> ChartRows {
        // The filter's values, bound, on the columns they hold.
        let only = SQLQuery.joined(
            Self.segmentColumns.compactMap { column, segment in
                filter.value(segment).map { (value: String) -> SQLQuery in SQLQuery(verbatim: "AND \(column) = ") + "\(value)" }
            }, separator: " ")
        let kept = Self.segmentColumns.filter { segments.contains($0.segment) }.map(\.column)
        // Kept columns in the primary key's order; the others as constants, so every row has each column.
        let select = SQLQuery(verbatim: Self.segmentColumns.map { kept.contains($0.column) ? $0.column : "'' AS \($0.column)" }.joined(separator: ", "))
        let grouped = SQLQuery(verbatim: (["month_offset"] + kept).joined(separator: ", "))
        var rows = ChartRows()
        let stocks = kinds.filter(\.isStock).map(\.rawValue)
        if !stocks.isEmpty {
            rows.opening = try Self.chartDeltas(session.query(
                """
                SELECT environment, kind, CAST(\(fromDay) AS BIGINT) AS day, currency, \(select), month_offset, SUM(value) AS value FROM chart_daily
                WHERE environment IN (\(list: environments)) AND kind IN (\(list: stocks)) AND day < \(fromDay) \(only)
                GROUP BY environment, kind, currency, \(grouped) HAVING SUM(value) <> 0
                """))
        }
        rows.days = try Self.chartDeltas(session.query(
            """
            SELECT environment, kind, day, currency, \(select), month_offset, SUM(value) AS value FROM chart_daily
            WHERE environment IN (\(list: environments)) AND kind IN (\(list: kinds.map(\.rawValue))) AND day >= \(fromDay) AND day <= \(toDay) \(only)
            GROUP BY environment, kind, day, currency, \(grouped) HAVING SUM(value) <> 0
            """))
        return rows
    }

    /// A chart read's rows as the charts read them; a series this build does not know is left out.
    /// Each column is found by its name once per result, then read by position: a read returns
    /// tens of thousands of rows, and decoding each one by name was most of its cost.
    static func chartDeltas(_ rows: [SQLRow]) throws -> [ChartDelta] {
        guard let first = rows.first else { return [] }
        let names = ["environment", "kind", "day", "currency", "store", "product", "storefront", "period_type", "month_offset", "value"]
        let at = try names.map { try first.position($0) }
        var deltas: [ChartDelta] = []
        deltas.reserveCapacity(rows.count)
        // The rows come series by series: a series' name is matched once per run of its rows.
        var kindName: String?, kind: ChartKind?
        for row in rows {
            let name = try row.text(at[1])
            if name != kindName {
                kindName = name
                kind = ChartKind(rawValue: name)
            }
            guard let kind else { continue }
            deltas.append(ChartDelta(
                environment: Environment(rawValue: try row.text(at[0])), day: try row.int(at[2]), kind: kind, currency: try row.text(at[3]),
                segment: ChartSegment(store: try row.text(at[4]), product: try row.text(at[5]), storefront: try row.text(at[6]),
                                      periodType: try row.text(at[7])),
                offset: try row.int(at[8]), value: try row.int(at[9])))
        }
        return deltas
    }

    /// The segment columns of `chart_daily`, in the primary key's order.
    static let segmentColumns: [(column: String, segment: ChartSegmentation)] = [
        ("store", .store), ("product", .product), ("storefront", .storefront), ("period_type", .periodType),
    ]
}

/// One chart row's key, in storage's words.
struct ChartRowKey: Hashable, Comparable {
    var environment: String
    var kind: String
    var day: Int64
    var currency: String
    var store: String
    var product: String
    var storefront: String
    var periodType: String
    var offset: Int64

    init(environment: String, kind: String, day: Int64, currency: String, store: String, product: String, storefront: String,
         periodType: String, offset: Int64) {
        (self.environment, self.kind, self.day, self.currency) = (environment, kind, day, currency)
        (self.store, self.product, self.storefront, self.periodType, self.offset) = (store, product, storefront, periodType, offset)
    }

    init(_ delta: ChartDelta) {
        environment = delta.environment.rawValue
        kind = delta.kind.rawValue
        day = delta.day
        currency = MetricCodec.clean(delta.currency)
        store = MetricCodec.clean(delta.segment.store)
        product = MetricCodec.clean(delta.segment.product)
        storefront = MetricCodec.clean(delta.segment.storefront)
        periodType = MetricCodec.clean(delta.segment.periodType)
        offset = delta.offset
    }

    /// The row of this key with `value`; nil for a kind this build does not know.
    func delta(_ value: Int64) -> ChartDelta? {
        ChartKind(rawValue: kind).map {
            ChartDelta(
                environment: Environment(rawValue: environment), day: day, kind: $0, currency: currency,
                segment: ChartSegment(store: store, product: product, storefront: storefront, periodType: periodType), offset: offset,
                value: value)
        }
    }

    /// The order of the tuple of the fields, compared one by one without copying them into
    /// tuples: every commit sorts its chart rows (the lock order), so this runs often.
    static func < (a: Self, b: Self) -> Bool {
        if a.environment != b.environment { return a.environment < b.environment }
        if a.kind != b.kind { return a.kind < b.kind }
        if a.day != b.day { return a.day < b.day }
        if a.currency != b.currency { return a.currency < b.currency }
        if a.store != b.store { return a.store < b.store }
        if a.product != b.product { return a.product < b.product }
        if a.storefront != b.storefront { return a.storefront < b.storefront }
        if a.periodType != b.periodType { return a.periodType < b.periodType }
        return a.offset < b.offset
    }
}

/// One row's key in `chart_segment_daily`: a `chart_daily` key with every segment column summed
/// over but the one `segmentation` names (empty: none), whose value is `segment`.
struct ChartSegmentRowKey: Hashable, Comparable {
    var environment: String
    var kind: String
    var segmentation: String
    var day: Int64
    var currency: String
    var offset: Int64
    var segment: String

    /// The rows of `chart_segment_daily` a change of the `chart_daily` row `key` changes by as much:
    /// the unsegmented one and one per segment column.
    static func rows(of key: ChartRowKey) -> [Self] {
        let values: [(String, String)] = [("", ""), (ChartSegmentation.store.rawValue, key.store), (ChartSegmentation.product.rawValue, key.product),
                                          (ChartSegmentation.storefront.rawValue, key.storefront), (ChartSegmentation.periodType.rawValue, key.periodType)]
        return values.map {
            Self(environment: key.environment, kind: key.kind, segmentation: $0.0, day: key.day, currency: key.currency, offset: key.offset, segment: $0.1)
        }
    }

    /// The order of the tuple of the fields, compared one by one (as ``ChartRowKey``'s).
    static func < (a: Self, b: Self) -> Bool {
        if a.environment != b.environment { return a.environment < b.environment }
        if a.kind != b.kind { return a.kind < b.kind }
        if a.segmentation != b.segmentation { return a.segmentation < b.segmentation }
        if a.day != b.day { return a.day < b.day }
        if a.currency != b.currency { return a.currency < b.currency }
        if a.offset != b.offset { return a.offset < b.offset }
        return a.segment < b.segment
    }
}
