import Entitlements

extension Schema {
    /// The Play customers' metric and chart contributions taken out of the rollups and forgotten,
    /// so that ``Ledger/backfillMetricsChunk(limit:projector:)`` (run by every start) computes them
    /// again from their facts: rollups written before Play purchases had prices, a store segment
    /// and Apple's storefront code counted them under `appStore`, by Google's two-letter country
    /// code, and left one-time products out. Every row a contribution added is subtracted (rows
    /// left at zero are deleted, as no contribution holds them), so nothing is counted twice and
    /// the rebuilt rows equal those of a fresh ingestion.
    static func forgetPlayRollups(_ session: any SQLSession) throws {
        let customers = try session.values(
            """
            SELECT m.customer_id FROM customer_metrics m WHERE m.customer_id IN (
                SELECT l.customer_id FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
                WHERE f.kind IN ('playSubscription', 'playProduct', 'playVoided')
                UNION
                SELECT c.merged_into FROM facts f JOIN links l ON l.original_transaction_id = f.original_transaction_id
                JOIN customers c ON c.id = l.customer_id
                WHERE f.kind IN ('playSubscription', 'playProduct', 'playVoided') AND c.merged_into IS NOT NULL)
            ORDER BY m.customer_id
            """, as: Int64.self)
        guard !customers.isEmpty else { return }
        var metrics: [MetricRowKey: Int64] = [:]
        var charts: [ChartRowKey: Int64] = [:]
        for id in customers {
            guard let text = try session.value("SELECT deltas FROM customer_metrics WHERE customer_id = \(id)", as: String.self) else { continue }
            let stored = MetricCodec.decode(text)
            for delta in stored.deltas { metrics[MetricRowKey(delta), default: 0] -= delta.value }
            for delta in stored.charts { charts[ChartRowKey(delta), default: 0] -= delta.value }
            try session.query("DELETE FROM customer_metrics WHERE customer_id = \(id)")
        }
        // The rollups' layout when this runs: without shards on an upgrade (they come later),
        // with them on a database that already has them (run again); then into shard 0.
        let shard: SQLQuery? = try hasRollupShards(session) ? "0" : nil
        var updates: [SQLQuery] = []
        for (key, change) in metrics.sorted(by: { $0.key < $1.key }) where change != 0 {
            updates.append(
                Ledger.addMetric(environment: key.environment, day: key.day, kind: key.kind, currency: key.currency, change: change, shard: shard))
        }
        for (key, change) in charts.sorted(by: { $0.key < $1.key }) where change != 0 {
            updates.append(Ledger.addChart(key, change: change, shard: shard))
        }
        for chunk in stride(from: 0, to: updates.count, by: 500) {
            _ = try session.pipeline(Array(updates[chunk..<min(chunk + 500, updates.count)]))
        }
        try session.query("DELETE FROM metric_daily WHERE value = 0")
        try session.query("DELETE FROM chart_daily WHERE value = 0")
        // The rollups per segmentation are sums of `chart_daily`: made again from it.
        try session.query("DELETE FROM chart_segment_daily")
        for fill in Ledger.fillChartSegments { try session.execute(fill) }
    }

    /// Whether the rollups have their `shard` column (``RollupShards``) yet.
    static func hasRollupShards(_ session: any SQLSession) throws -> Bool {
        let columns: SQLQuery = session.dialect == .postgres
            ? "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'metric_daily' AND column_name = 'shard'"
            : "SELECT COUNT(*) FROM pragma_table_info('metric_daily') WHERE name = 'shard'"
        return (try session.value(columns, as: Int64.self) ?? 0) > 0
    }
}
