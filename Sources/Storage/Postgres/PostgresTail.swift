/// How a PostgreSQL transaction writes its share of the hot rows (``TransactionTail``) and commits.
///
/// Batched (the default): one multi-row upsert per table — its rows passed as arrays, so each
/// table's statement has one text, prepared once per connection — then the outbox appends and
/// `COMMIT`, all in one pipeline: one round trip in which the server takes the shared row locks
/// and releases them at the commit, never waiting on this client in between. The rows go in
/// the same sorted order as the plain path's, so the lock order holds.
///
/// Plain: one statement per row, then `COMMIT` in a round trip of its own (what the differential
/// tests compare the batched path with).
enum PostgresTail {
    case batched
    case plain

    /// The tail's statements and the commit, sent on `session` (the tail is emptied).
    func commit(_ tail: TransactionTail, on session: PostgresConnection) throws {
        switch self {
        case .plain:
            try tail.flush(session)
            try session.execute("COMMIT")
        case .batched:
            let statements = Self.statements(tail.take()).map { SQLStatement($0.text(for: .postgres), parameters: $0.binds) }
            _ = try session.pipeline(statements + [SQLStatement("COMMIT")])
        }
    }

    /// The batched statements of `rows`, in the lock order: a table's rows in one upsert.
    static func statements(_ rows: TransactionTail.Rows) -> [SQLQuery] {
        var statements: [SQLQuery] = []
        if !rows.metrics.isEmpty {
            let keys = rows.metrics.map(\.key)
            statements.append(
                """
                INSERT INTO metric_daily (environment, day, kind, currency, value)
                SELECT * FROM unnest(\(texts(keys.map(\.environment)))::text[], \(numbers(keys.map(\.day)))::bigint[],
                    \(texts(keys.map(\.kind)))::text[], \(texts(keys.map(\.currency)))::text[], \(numbers(rows.metrics.map(\.value)))::bigint[])
                ON CONFLICT (environment, day, kind, currency) DO UPDATE SET value = metric_daily.value + excluded.value
                """)
        }
        if !rows.charts.isEmpty {
            let keys = rows.charts.map(\.key)
            statements.append(
                """
                INSERT INTO chart_daily (environment, kind, day, currency, store, product, storefront, period_type, month_offset, value)
                SELECT * FROM unnest(\(texts(keys.map(\.environment)))::text[], \(texts(keys.map(\.kind)))::text[],
                    \(numbers(keys.map(\.day)))::bigint[], \(texts(keys.map(\.currency)))::text[], \(texts(keys.map(\.store)))::text[],
                    \(texts(keys.map(\.product)))::text[], \(texts(keys.map(\.storefront)))::text[], \(texts(keys.map(\.periodType)))::text[],
                    \(numbers(keys.map(\.offset)))::bigint[], \(numbers(rows.charts.map(\.value)))::bigint[])
                ON CONFLICT (environment, kind, day, currency, store, product, storefront, period_type, month_offset)
                DO UPDATE SET value = chart_daily.value + excluded.value
                """)
        }
        if !rows.segments.isEmpty {
            let keys = rows.segments.map(\.key)
            statements.append(
                """
                INSERT INTO chart_segment_daily (environment, kind, segmentation, day, currency, month_offset, segment, value)
                SELECT * FROM unnest(\(texts(keys.map(\.environment)))::text[], \(texts(keys.map(\.kind)))::text[],
                    \(texts(keys.map(\.segmentation)))::text[], \(numbers(keys.map(\.day)))::bigint[], \(texts(keys.map(\.currency)))::text[],
                    \(numbers(keys.map(\.offset)))::bigint[], \(texts(keys.map(\.segment)))::text[], \(numbers(rows.segments.map(\.value)))::bigint[])
                ON CONFLICT (environment, kind, segmentation, day, currency, month_offset, segment)
                DO UPDATE SET value = chart_segment_daily.value + excluded.value
                """)
        }
        if !rows.hourly.isEmpty {
            let keys = rows.hourly.map(\.key)
            statements.append(
                """
                INSERT INTO ingest_hourly (hour, code, shard, count)
                SELECT * FROM unnest(\(numbers(keys.map(\.hour)))::bigint[], \(texts(keys.map(\.code)))::text[],
                    \(numbers(keys.map(\.shard)))::bigint[], \(numbers(rows.hourly.map(\.value)))::bigint[])
                ON CONFLICT (hour, code, shard) DO UPDATE SET count = ingest_hourly.count + excluded.count
                """)
        }
        if !rows.latest.isEmpty {
            let keys = rows.latest.map(\.key)
            statements.append(
                """
                INSERT INTO ingest_latest (bundle_id, environment, shard, received_at)
                SELECT * FROM unnest(\(texts(keys.map(\.bundleId)))::text[], \(texts(keys.map(\.environment)))::text[],
                    \(numbers(keys.map(\.shard)))::bigint[], \(numbers(rows.latest.map(\.value)))::bigint[])
                ON CONFLICT (bundle_id, environment, shard) DO UPDATE SET received_at = GREATEST(ingest_latest.received_at, excluded.received_at)
                """)
        }
        return statements + TransactionTail.eventStatements(rows.events, dialect: .postgres)
    }

    /// A `text[]` literal (bound as text, never spliced).
    private static func texts(_ values: [String]) -> String { Ledger.arrayLiteral(values) }

    /// A `bigint[]` literal (bound as text).
    private static func numbers(_ values: [Int64]) -> String { "{" + values.map(String.init).joined(separator: ",") + "}" }
}
