import Entitlements
import Testing

@testable import Storage

/// The charts' rollups per segmentation (`chart_segment_daily`) on every backend: whichever way
/// they are written (each transaction's changes, the backfill, the benchmark's loader, the
/// migration that adds them), every row is the plain sum of `chart_daily` over the segment
/// columns it does not keep, and no sum is missing.
@Suite struct ChartSegmentRollupTests {
    /// `chart_daily` summed per segmentation, written here apart from the store's own statements.
    static let plainSums = """
        SELECT environment, kind, '' AS segmentation, day, currency, month_offset, '' AS segment, SUM(value) AS value FROM chart_daily
            GROUP BY environment, kind, day, currency, month_offset HAVING SUM(value) <> 0
        UNION ALL SELECT environment, kind, 'store', day, currency, month_offset, store, SUM(value) FROM chart_daily
            GROUP BY environment, kind, day, currency, month_offset, store HAVING SUM(value) <> 0
        UNION ALL SELECT environment, kind, 'product', day, currency, month_offset, product, SUM(value) FROM chart_daily
            GROUP BY environment, kind, day, currency, month_offset, product HAVING SUM(value) <> 0
        UNION ALL SELECT environment, kind, 'storefront', day, currency, month_offset, storefront, SUM(value) FROM chart_daily
            GROUP BY environment, kind, day, currency, month_offset, storefront HAVING SUM(value) <> 0
        UNION ALL SELECT environment, kind, 'periodType', day, currency, month_offset, period_type, SUM(value) FROM chart_daily
            GROUP BY environment, kind, day, currency, month_offset, period_type HAVING SUM(value) <> 0
        """
    static let stored = "SELECT environment, kind, segmentation, day, currency, month_offset, segment, value FROM chart_segment_daily WHERE value <> 0"

    /// Rows in one table and not in the other, both ways; and how many sums there are.
    static func difference(_ store: any LedgerStore) async throws -> (differing: Int64, sums: Int64) {
        let differing = try await store.count(
            SQLQuery(verbatim: """
                SELECT COUNT(*) FROM (SELECT * FROM (\(stored)) a EXCEPT SELECT * FROM (\(plainSums)) b) x
                """))
            + store.count(SQLQuery(verbatim: "SELECT COUNT(*) FROM (SELECT * FROM (\(plainSums)) b EXCEPT SELECT * FROM (\(stored)) a) x"))
        return (differing, try await store.count(SQLQuery(verbatim: "SELECT COUNT(*) FROM (\(plainSums)) b")))
    }

    @Test(arguments: Backend.all)
    func writesAndTheBackfillKeepThePlainSums(_ backend: Backend) async throws {
        let history = MetricRollupTests.history
        let shuffled = [5, 17, 0, 23, 9, 2, 14, 11, 20, 7, 1, 16, 22, 4, 12, 19, 8, 3, 21, 13, 6, 18, 10, 15]
        let now = testNow + 800 * MetricRollupTests.day
        try await withStore(backend, now: now) { store, _ in
            for (index, k) in shuffled.enumerated() {
                _ = try await store.ingest(Fixture.batch(facts: [history[k]], claim: Claim(appUserId: "alice")), projector: ChartRollupTests.projector, now: now)
                // Each fact out of order moves earlier days' rows, which the segment rows follow.
                if index % 6 == 5 {
                    let (differing, sums) = try await Self.difference(store)
                    #expect(differing == 0)
                    #expect(sums > 0)
                }
            }
            let (differing, sums) = try await Self.difference(store)
            #expect(differing == 0)
            // Every segmentation is written: none, store, product, storefront and period type.
            #expect(try await store.count("SELECT COUNT(DISTINCT segmentation) FROM chart_segment_daily") == 5)

            try await store.raw("DELETE FROM customer_metrics")
            try await store.raw("DELETE FROM metric_daily")
            try await store.raw("DELETE FROM chart_daily")
            try await store.raw("DELETE FROM chart_segment_daily")
            #expect(try await store.backfillMetrics(projector: ChartRollupTests.projector, limit: 10) == 1)
            #expect(try await Self.difference(store) == (0, sums))
        }
    }

    @Test(arguments: Backend.all)
    func theBenchmarksLoaderKeepsThePlainSums(_ backend: Backend) async throws {
        try await withStore(backend, now: testNow, checksRebuild: false) { store, _ in
            // Twice: the second load adds to the first's rows.
            try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<300, now: testNow)
            try await _StorageBenchmark.bulkLoadCharts(store, customers: 300..<700, now: testNow)
            let (differing, sums) = try await Self.difference(store)
            #expect(differing == 0)
            #expect(sums > 1000)
        }
    }

    /// The migration that adds the table fills it from the rows `chart_daily` holds then.
    @Test(arguments: Backend.durable)
    func theMigrationFillsThePlainSums(_ backend: Backend) async throws {
        let database = try TestDatabase(backend)
        let store = try await database.open()
        try await _StorageBenchmark.bulkLoadCharts(store, customers: 0..<300, now: testNow)
        let sums = try await Self.difference(store).sums
        try await store.raw("DROP TABLE chart_segment_daily")
        let version = try await store.count("SELECT MAX(version) FROM schema_migrations WHERE name = 'chart rollups per segmentation'")
        try await store.raw("DELETE FROM schema_migrations WHERE version = \(version)")
        #expect(try await store.migrate().applied == [Int(version)])
        #expect(try await Self.difference(store) == (0, sums))
        await store.close()
        await database.destroy()
    }
}
