import Entitlements

extension _StorageBenchmark {
    /// Gives synthetic customers `range` their `chart_daily` rows (and the per-segmentation
    /// `chart_segment_daily` rows that follow from them), as if the charts' rollups had
    /// run over them: the same histories as ``bulkLoadMetrics`` (customer n pays first on day
    /// `today - n % 730` and every 30 days after, for `1 + n % 13` periods), spread over two stores,
    /// three products, twelve storefronts (with their currencies) and the `normal`/`intro`/`trial`
    /// period types; every fourth customer starts with a 7-day trial that converts, one in twenty
    /// had a trial that lapsed, one in twenty-five pauses a month and comes back, one in fifty has
    /// its first payment refunded. One set-based statement (`entitled bench console`), so that a
    /// million customers load in seconds rather than by a loop of upserts.
    package static func bulkLoadCharts(_ store: any LedgerStore, customers range: Range<Int>, now: Int64) async throws {
        guard let store = store as? any SessionBackedStore else { throw StorageError(.invalidArgument, "unsupported store") }
        guard !range.isEmpty else { return }
        let sql = chartsSQL(range, today: metricDay(now))
        try await store.write { session in
            try session.execute(sql)
            // The rows per segmentation are a function of `chart_daily`: computed again from all of it.
            try session.execute("DELETE FROM chart_segment_daily")
            for fill in Ledger.fillChartSegments { try session.execute(fill) }
        }
    }

    /// The statement: only integers computed here are spliced in, no outside text.
    static func chartsSQL(_ range: Range<Int>, today: Int64) -> String {
        let storefronts = ["USA", "GBR", "DEU", "FRA", "JPN", "CAN", "AUS", "BRA", "IND", "ITA", "ESP", "NLD"]
        let currencies = ["USD", "GBP", "EUR", "EUR", "JPY", "CAD", "AUD", "BRL", "INR", "EUR", "EUR", "EUR"]
        func cases(_ values: [String]) -> String {
            values.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }.joined(separator: " ")
        }
        // Each arm: kind, day, period type, money (1: the value is a price in `cur`), offset, value.
        let cols = "st, pr, sf"
        return """
            WITH RECURSIVE
            seq(n) AS (SELECT \(range.lowerBound) UNION ALL SELECT n + 1 FROM seq WHERE n < \(range.upperBound - 1)),
            months(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM months WHERE k < 12),
            base AS (
                SELECT n, \(today) - n % 730 AS s, 1 + n % 13 AS p, n % 5 AS tier, n / 7 % 12 AS country,
                       CASE WHEN n % 10 < 7 THEN 'appStore' ELSE 'playStore' END AS st,
                       CASE WHEN n % 9 = 5 THEN 'intro' ELSE 'normal' END AS pt
                FROM seq),
            people AS (
                SELECT n, s, p, s + 30 * p AS e, st, pt,
                       CASE tier WHEN 3 THEN 'com.example.plus.monthly' WHEN 4 THEN 'com.example.lite.monthly' ELSE 'com.example.pro.monthly' END AS pr,
                       CASE country \(cases(storefronts)) END AS sf,
                       CASE country \(cases(currencies)) END AS cur,
                       (CASE tier WHEN 3 THEN 4990 WHEN 4 THEN 2990 ELSE 9990 END) * (CASE country WHEN 4 THEN 150 WHEN 8 THEN 80 ELSE 1 END) AS price,
                       CASE WHEN (\(today) - s) / 30 + 1 < p THEN (\(today) - s) / 30 + 1 ELSE p END AS paid,
                       CASE WHEN n % 4 = 0 THEN s - 7 WHEN n % 20 = 2 THEN s - 40 ELSE s END AS opened,
                       CASE WHEN n % 25 = 3 AND p >= 3 THEN 1 ELSE 0 END AS paused,
                       CASE WHEN n % 50 = 7 AND s + 3 <= \(today) THEN 1 ELSE 0 END AS refunded
                FROM base),
            moves(what, kind, cash, sign) AS (VALUES
                ('start', 'actives', 0, 1), ('start', 'mrr', 1, 1), ('start', 'activesNew', 0, 1), ('start', 'mrrNew', 1, 1),
                ('start', 'subscriptionStarts', 0, 1),
                ('end', 'actives', 0, -1), ('end', 'mrr', 1, -1), ('end', 'activesChurned', 0, 1), ('end', 'mrrChurned', 1, -1),
                ('back', 'actives', 0, 1), ('back', 'mrr', 1, 1), ('back', 'activesReactivated', 0, 1), ('back', 'mrrReactivated', 1, 1)),
            happenings(what, day, \(cols), pt, cur, price) AS (
                SELECT 'start', s, \(cols), pt, cur, price FROM people
                UNION ALL SELECT 'end', e, \(cols), pt, cur, price FROM people WHERE e <= \(today)
                UNION ALL SELECT 'end', s + 30, \(cols), pt, cur, price FROM people WHERE paused = 1 AND s + 30 <= \(today)
                UNION ALL SELECT 'back', s + 60, \(cols), pt, cur, price FROM people WHERE paused = 1 AND s + 60 <= \(today)),
            charges AS (
                SELECT k, s + 30 * k AS day, \(cols), pt, cur, price, s FROM people JOIN months ON k < paid
                WHERE NOT (paused = 1 AND k = 1)),
            arms(kind, day, \(cols), pt, cur, off, v) AS (
                SELECT kind, day, \(cols), pt, CASE WHEN cash = 1 THEN cur ELSE '' END, 0, CASE WHEN cash = 1 THEN sign * price ELSE sign END
                FROM happenings JOIN moves USING (what)
                UNION ALL SELECT 'revenue', day, \(cols), pt, cur, 0, price FROM charges
                UNION ALL SELECT 'proceeds', day, \(cols), pt, cur, 0, price * (CASE WHEN k < 12 THEN 70 ELSE 85 END) / 100 FROM charges
                UNION ALL SELECT 'paidTransactions', day, \(cols), pt, '', 0, 1 FROM charges
                UNION ALL SELECT 'subscriptionRetained', s, \(cols), pt, '', k, 1 FROM charges WHERE k >= 1
                UNION ALL SELECT 'refundedTransactions', s, \(cols), pt, '', 0, 1 FROM people WHERE refunded = 1
                UNION ALL SELECT 'refunds', s + 3, \(cols), pt, '', 0, 1 FROM people WHERE refunded = 1
                UNION ALL SELECT 'refundAmount', s + 3, \(cols), pt, cur, 0, price FROM people WHERE refunded = 1
                UNION ALL SELECT 'trials', s - 7, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 4 = 0
                UNION ALL SELECT 'trials', s, \(cols), 'trial', '', 0, -1 FROM people WHERE n % 4 = 0
                UNION ALL SELECT 'trialsNew', s - 7, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 4 = 0
                UNION ALL SELECT 'trialsConverted', s, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 4 = 0
                UNION ALL SELECT 'trialStarts', s - 7, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 4 = 0
                UNION ALL SELECT 'trialConversions', s - 7, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 4 = 0
                UNION ALL SELECT 'trials', s - 40, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 20 = 2
                UNION ALL SELECT 'trials', s - 33, \(cols), 'trial', '', 0, -1 FROM people WHERE n % 20 = 2
                UNION ALL SELECT 'trialsNew', s - 40, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 20 = 2
                UNION ALL SELECT 'trialsExpired', s - 33, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 20 = 2
                UNION ALL SELECT 'trialStarts', s - 40, \(cols), 'trial', '', 0, 1 FROM people WHERE n % 20 = 2
                UNION ALL SELECT 'customersNew', opened, \(cols), CASE WHEN opened < s THEN 'trial' ELSE pt END, '', 0, 1 FROM people
                UNION ALL SELECT 'customersPaying', opened, \(cols), CASE WHEN opened < s THEN 'trial' ELSE pt END, '', 0, 1 FROM people
                    WHERE NOT (refunded = 1 AND paid = 1)
                UNION ALL SELECT 'customerRevenue', opened, \(cols), CASE WHEN opened < s THEN 'trial' ELSE pt END, cur, 0,
                    price * (paid - refunded - paused * (CASE WHEN paid > 1 THEN 1 ELSE 0 END)) FROM people)
            INSERT INTO chart_daily (environment, kind, day, currency, store, product, storefront, period_type, month_offset, value)
            SELECT 'Production', kind, day, cur, st, pr, sf, pt, off, SUM(v) FROM arms WHERE true
            GROUP BY kind, day, cur, st, pr, sf, pt, off HAVING SUM(v) <> 0
            ON CONFLICT (environment, kind, day, currency, store, product, storefront, period_type, month_offset, shard)
            DO UPDATE SET value = chart_daily.value + excluded.value
            """
    }
}
