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
    /// levels at the start of `fromDay`.
    func chartRows(environments: [String], kinds: [ChartKind], fromDay: Int64, toDay: Int64) throws -> ChartRows {
        let columns = SQLQuery(verbatim: "environment, kind, currency, store, product, storefront, period_type, month_offset")
        var rows = ChartRows()
        let stocks = kinds.filter(\.isStock).map(\.rawValue)
        if !stocks.isEmpty {
            let opening = try session.query(
                """
                SELECT \(columns), SUM(value) FROM chart_daily
                WHERE environment IN (\(list: environments)) AND kind IN (\(list: stocks)) AND day < \(fromDay)
                GROUP BY \(columns)
                """)
            rows.opening = try opening.compactMap { try Self.chartDelta($0, day: fromDay, valueColumn: 8) }.filter { $0.value != 0 }
        }
        let days = try session.query(
            """
            SELECT \(columns), value, day FROM chart_daily
            WHERE environment IN (\(list: environments)) AND kind IN (\(list: kinds.map(\.rawValue))) AND day >= \(fromDay) AND day <= \(toDay) AND value <> 0
            """)
        rows.days = try days.compactMap { try Self.chartDelta($0, day: try $0.int(9), valueColumn: 8) }
        return rows
    }

    private static func chartDelta(_ row: SQLRow, day: Int64, valueColumn: Int) throws -> ChartDelta? {
        guard let kind = ChartKind(rawValue: try row.text(1)) else { return nil }
        let segment = ChartSegment(store: try row.text(3), product: try row.text(4), storefront: try row.text(5), periodType: try row.text(6))
        return ChartDelta(environment: Environment(rawValue: try row.text(0)), day: day, kind: kind, currency: try row.text(2),
                          segment: segment, offset: try row.int(7), value: try row.int(valueColumn))
    }
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
