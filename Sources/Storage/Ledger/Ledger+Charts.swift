import Entitlements

// The charts' rollups (`chart_daily`): every customer's chart rows (``ChartDelta``, kept with
// their metric contribution in `customer_metrics`) summed per environment, series, day, currency,
// segment and month offset. A chart reads one range of days per series it needs, never the ledger.

extension Ledger {
    /// Adds `change` to one chart row.
    static func addChart(_ key: ChartRowKey, change: Int64) -> SQLQuery {
        """
        INSERT INTO chart_daily (environment, kind, day, currency, store, product, storefront, period_type, month_offset, value)
        VALUES (\(key.environment), \(key.kind), \(key.day), \(key.currency), \(key.store), \(key.product), \(key.storefront), \(key.periodType), \(key.offset), \(change))
        ON CONFLICT (environment, kind, day, currency, store, product, storefront, period_type, month_offset)
        DO UPDATE SET value = chart_daily.value + excluded.value
        """
    }

    /// The chart rows of `kinds` in `environments` from `fromDay` to `toDay`, and the stocks'
    /// levels at the start of `fromDay`, summed in SQL over every segment column but those of
    /// `segments` (read as empty): a row per environment, series, day, currency, month offset and
    /// value of the kept segments, so what comes back grows with what the chart splits by, not
    /// with every segment that exists.
    func chartRows(environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64, segments: Set<ChartSegmentation>) throws -> ChartRows {
        let kept = Self.segmentColumns.filter { segments.contains($0.segment) }.map(\.column)
        // Kept columns in the primary key's order; the others as constants, so every row has each column.
        let select = SQLQuery(verbatim: Self.segmentColumns.map { kept.contains($0.column) ? $0.column : "'' AS \($0.column)" }.joined(separator: ", "))
        let grouped = SQLQuery(verbatim: (["month_offset"] + kept).joined(separator: ", "))
        var rows = ChartRows()
        let stocks = kinds.filter(\.isStock).map(\.rawValue)
        if !stocks.isEmpty {
            rows.opening = try session.rows(
                """
                SELECT environment, kind, CAST(\(fromDay) AS BIGINT) AS day, currency, \(select), month_offset, SUM(value) AS value FROM chart_daily
                WHERE environment IN (\(list: environments)) AND kind IN (\(list: stocks)) AND day < \(fromDay)
                GROUP BY environment, kind, currency, \(grouped) HAVING SUM(value) <> 0
                """, as: ChartColumns.self
            ).compactMap(\.delta)
        }
        rows.days = try session.rows(
            """
            SELECT environment, kind, day, currency, \(select), month_offset, SUM(value) AS value FROM chart_daily
            WHERE environment IN (\(list: environments)) AND kind IN (\(list: kinds.map(\.rawValue))) AND day >= \(fromDay) AND day <= \(toDay)
            GROUP BY environment, kind, day, currency, \(grouped) HAVING SUM(value) <> 0
            """, as: ChartColumns.self
        ).compactMap(\.delta)
        return rows
    }

    /// The segment columns of `chart_daily`, in the primary key's order.
    private static let segmentColumns: [(column: String, segment: ChartSegmentation)] = [
        ("store", .store), ("product", .product), ("storefront", .storefront), ("period_type", .periodType),
    ]
}

/// One row of a chart read, by column name: its key and its value.
private struct ChartColumns: Decodable {
    var key: ChartRowKey
    var value: Int64

    private enum CodingKeys: String, CodingKey { case value }

    init(from decoder: any Decoder) throws {
        key = try ChartRowKey(from: decoder)
        value = try decoder.container(keyedBy: CodingKeys.self).decode(Int64.self, forKey: .value)
    }

    /// The row as the charts read it; nil for a series this build does not know.
    var delta: ChartDelta? {
        guard let kind = ChartKind(rawValue: key.kind) else { return nil }
        return ChartDelta(environment: Environment(rawValue: key.environment), day: key.day, kind: kind, currency: key.currency,
                          segment: ChartSegment(store: key.store, product: key.product, storefront: key.storefront, periodType: key.periodType),
                          offset: key.offset, value: value)
    }
}

/// One chart row's key, in storage's words (decoded from the columns of its name).
struct ChartRowKey: Hashable, Comparable, Decodable {
    var environment: String
    var kind: String
    var day: Int64
    var currency: String
    var store: String
    var product: String
    var storefront: String
    var periodType: String
    var offset: Int64

    private enum CodingKeys: String, CodingKey {
        case environment, kind, day, currency, store, product, storefront, periodType, offset = "month_offset"
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

    static func < (a: Self, b: Self) -> Bool {
        let first = (a.environment, a.kind, a.day, a.currency, a.store, a.product)
        let second = (b.environment, b.kind, b.day, b.currency, b.store, b.product)
        if first != second { return first < second }
        return (a.storefront, a.periodType, a.offset) < (b.storefront, b.periodType, b.offset)
    }
}
